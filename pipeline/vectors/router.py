"""The vector store a process uses: the live collection, plus a migration's target for writes.

Reads (search, scroll, retrieve, counts) go to the live collection; a search whose query was
embedded for the collection that was live a moment ago (a recall that read the collection state
just before a migration's switch, then searched just after it) goes to that collection while this
process still has it open, rather than failing on the size. Deletes and payload
changes go to every writable collection (live and, during a dimension migration, its target),
so the target never keeps a point or a payload the live one has lost. Upserts carry vectors
of one size, so they go to the live collection here; the vector stage writes a migration's
target itself, with the vectors embedded for it (see ``pipeline.actors.vectors``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from pipeline.vectors.store import VectorHit, VectorPoint, VectorQuery, VectorRecord, VectorStore

if TYPE_CHECKING:
    from pipeline.graph import Scope
    from pipeline.services import Services


class VectorRouter:
    def __init__(self, services: "Services"):
        self._services = services

    # --- which stores -----------------------------------------------------------------
    def live(self) -> VectorStore:
        return self._services.vector_store(self._services.collections.state().live)

    def _writable(self) -> list[VectorStore]:
        return [self._services.vector_store(spec) for spec in self._services.collections.state().writable]

    def _targets(self) -> list[VectorStore]:
        state = self._services.collections.state()
        return [self._services.vector_store(state.target)] if state.target else []

    @property
    def backend(self) -> str:
        return self.live().backend

    def _searched(self, dims: int) -> VectorStore:
        live = self._services.collections.state().live
        if dims != live.dims:
            earlier = self._services.open_spec_of_size(dims)
            if earlier is not None:
                return self._services.vector_store(earlier)
        return self._services.vector_store(live)  # a size nothing open has: the live store says so

    # --- reads: the live collection -----------------------------------------------------
    def search(self, query: VectorQuery) -> list[VectorHit]:
        return self._searched(len(query.vector)).search(query)

    def search_many(self, queries: list[VectorQuery]) -> list[list[VectorHit]]:
        if not queries:
            return []
        return self._searched(len(queries[0].vector)).search_many(queries)

    def text_search(self, text: str, scope: "Scope", limit: int) -> list[VectorHit] | None:
        return self.live().text_search(text, scope, limit)

    def count(self) -> int:
        return self.live().count()

    def count_memories(self, excluded_types: frozenset[str] = frozenset()) -> int:
        return self.live().count_memories(excluded_types)

    def scroll(self, offset: str | None, limit: int, with_vectors: bool = False,
               payload_fields: list[str] | None = None) -> tuple[list[VectorRecord], str | None]:
        return self.live().scroll(offset, limit, with_vectors, payload_fields)

    def retrieve(self, memory_ids: list[str], with_vectors: bool = False,
                 payload_fields: list[str] | None = None) -> dict[str, VectorRecord]:
        return self.live().retrieve(memory_ids, with_vectors, payload_fields)

    def existing(self, memory_ids: list[str]) -> set[str]:
        return self.live().existing(memory_ids)

    def ping(self) -> bool:
        return self.live().ping()

    # --- writes ---------------------------------------------------------------------------
    def upsert(self, points: list[VectorPoint]) -> None:
        self.live().upsert(points)

    def delete(self, memory_ids: list[str]) -> None:
        for store in self._writable():
            store.delete(memory_ids)

    def set_payload(self, memory_id: str, payload: dict[str, Any]) -> None:
        self.set_payloads({memory_id: payload})

    def set_payloads(self, payloads: dict[str, dict[str, Any]]) -> None:
        self._write_payloads(payloads, lambda store, some: store.set_payloads(some))

    def replace_payloads(self, payloads: dict[str, dict[str, Any]]) -> None:
        self._write_payloads(payloads, lambda store, some: store.replace_payloads(some))

    def _write_payloads(self, payloads: dict[str, dict[str, Any]], write) -> None:
        write(self.live(), payloads)
        for target in self._targets():  # a target still being built lacks some points: skip those
            present = target.retrieve(list(payloads))
            if present:
                write(target, {m: p for m, p in payloads.items() if m in present})

    # --- lifecycle --------------------------------------------------------------------
    def ensure_collection(self) -> None:
        self._writable()  # opening a store ensures its collection

    def build_due(self) -> bool:
        """Does any open store want an index build now (Edge; a server builds its own)?"""
        return any(getattr(store, "build_due", lambda: False)() for store in self._services.open_vector_stores())

    def due_build_is_codes_only(self) -> bool:
        """Is every build due among the open stores a codes-only one (none gives a graph)?"""
        due = [store for store in self._services.open_vector_stores() if getattr(store, "build_due", lambda: False)()]
        return bool(due) and all(getattr(store, "due_build_is_codes_only", lambda: False)() for store in due)

    def pending_changes(self) -> int:
        """The most points any open store would index in its next build (0 for a server)."""
        return max((getattr(store, "pending_changes", lambda: 0)() for store in self._services.open_vector_stores()), default=0)

    def build_pending(self) -> int:
        """The most points any open store's coming index build will index (0: none coming, as
        for a shard under its plain size with few changes, or a server)."""
        return max((getattr(store, "build_pending", lambda: 0)() for store in self._services.open_vector_stores()), default=0)

    def build_in_flight(self) -> bool:
        """Is a child process building an open Edge store's index (swapped in by ``maintain``)?"""
        return any(getattr(store, "build_in_flight", lambda: False)() for store in self._services.open_vector_stores())

    def maintain(self) -> None:
        for store in self._services.open_vector_stores():
            store.maintain()

    def finish_build(self) -> None:
        for store in self._services.open_vector_stores():
            store.finish_build()

    def persist(self) -> int:
        return sum(store.persist() for store in self._services.open_vector_stores())

    def warm_page_cache(self, stop: Callable[[], bool] = lambda: False) -> int:
        """Read every open Edge store's files into the page cache (a server's are its own)."""
        return sum(getattr(store, "warm_page_cache", lambda stop: 0)(stop) for store in self._services.open_vector_stores())

    def close(self) -> None:
        self._services.close_vector_stores()

    def drop(self) -> None:
        raise NotImplementedError("drop a collection through Services.drop_vector_store")
