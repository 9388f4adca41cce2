"""The vector store's protocol, the values it trades in, and what both backends share.

The backends (``pipeline.vectors.edge``, ``pipeline.vectors.server``) build their filters with
``build_filter`` and report a collection of the wrong size with ``size_mismatch``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from pipeline.errors import VectorSizeMismatch
from pipeline.graph import Scope, node_properties
from pipeline.vectors.edge_payload import PackedPayload, unpack_payload

# Payload fields recall filters on, and the index each gets.
KEYWORD_INDEXES = ("memory_id", "tags_lower", "tag_prefixes", "type", "lifecycle")
FLOAT_INDEXES = ("timestamp_epoch", "importance")
# Every search excludes archived points. A keyword ``lifecycle`` field carries that state: a
# keyword must_not is served from its index, where the same check on a bool index costs tens
# of times more.
ARCHIVED = "archived"


def archived_payload(at: str) -> dict[str, Any]:
    """The payload fields that mark a point archived (and out of every search)."""
    return {"archived": True, "archived_at": at, "lifecycle": ARCHIVED}


@dataclass(frozen=True)
class VectorPoint:
    memory_id: str
    vector: list[float]
    payload: dict[str, Any]  # or an Edge ``PackedPayload`` (see ``edge_packed_payload``)
    point_id: str | None = None  # ``point_id_for(memory_id)`` when the sender computed it



def plain_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload as callers wrote it, whether or not it arrived packed."""
    return unpack_payload(payload) if isinstance(payload, PackedPayload) else payload


@dataclass(frozen=True)
class VectorHit:
    memory_id: str
    score: float
    payload: dict[str, Any]
    vector: list[float] | None = None  # only when the search was asked for it


@dataclass(frozen=True)
class VectorRecord:
    """A stored point as maintenance reads it back (vector only when asked for)."""

    memory_id: str
    payload: dict[str, Any]
    vector: list[float] | None = None


@dataclass(frozen=True)
class VectorQuery:
    vector: list[float]
    limit: int
    scope: Scope = field(default_factory=Scope)
    with_payload: bool = True  # False: hits carry only memory_id (cheaper: nothing converted)


class VectorStore(Protocol):
    backend: str

    def ensure_collection(self) -> None: ...
    def upsert(self, points: list[VectorPoint]) -> None: ...
    def delete(self, memory_ids: list[str]) -> None: ...
    def set_payload(self, memory_id: str, payload: dict[str, Any]) -> None: ...
    def search(self, query: VectorQuery) -> list[VectorHit]: ...
    def search_many(self, queries: list[VectorQuery]) -> list[list[VectorHit]]: ...  # one call, hits per query
    # BM25 keyword hits (with their vectors) in scope; None where the store has no text index
    def text_search(self, text: str, scope: Scope, limit: int) -> list[VectorHit] | None: ...
    def count(self) -> int: ...
    def ping(self) -> bool: ...
    def maintain(self) -> None: ...
    def finish_build(self) -> None: ...  # block until an index build maintain() left running is done (offline tools)
    def persist(self) -> int: ...  # make writes so far durable without a log replay (Edge: flush); returns writes flushed
    def close(self) -> None: ...
    def drop(self) -> None: ...  # delete the collection and everything in it (a finished migration's old one)
    # Maintenance (sync, consolidation, backup): paged reads and batched payload writes.
    def scroll(self, offset: str | None, limit: int, with_vectors: bool = False,
               payload_fields: list[str] | None = None) -> tuple[list[VectorRecord], str | None]: ...  # payload_fields: only these keys (None: the whole payload)
    def retrieve(self, memory_ids: list[str], with_vectors: bool = False,
                 payload_fields: list[str] | None = None) -> dict[str, VectorRecord]: ...  # payload_fields: as scroll's
    def existing(self, memory_ids: list[str]) -> set[str]: ...  # those with a point; no payload read
    def set_payloads(self, payloads: dict[str, dict[str, Any]]) -> None: ...  # merged into each point's payload
    def replace_payloads(self, payloads: dict[str, dict[str, Any]]) -> None: ...  # whole payloads: a key one lacks is removed
    def count_memories(self, excluded_types: frozenset[str] = frozenset()) -> int: ...


def size_mismatch(found: Any, wanted: int) -> VectorSizeMismatch:
    return VectorSizeMismatch(
        f"the vector collection stores {found}-dimensional vectors but the embedding provider "
        f"produces {wanted} (VECTOR_SIZE/EMBEDDING_PROVIDER changed?). Re-embed into a new "
        "collection (QDRANT_COLLECTION) or restore the previous provider."
    )


def stored_record(raw_id: Any, payload: dict[str, Any] | None, vector: Any) -> VectorRecord:
    payload = payload or {}
    return VectorRecord(payload.get("memory_id") or str(raw_id), payload, list(vector) if vector is not None else None)


def build_filter(scope: Scope, *, field, one, any_of, range_, combine, either, exclusions: bool = True):
    """One filter, two client libraries: the builders passed in make each backend's objects.

    Without ``exclusions`` the filter leaves out the two exclusions every search carries
    (archived points, ``RECALL_EXCLUDED_TYPES``): the caller checks its hits for them itself
    (see ``EdgeVectorStore.search``).
    """
    must, must_not = [], []
    tf = scope.tags
    if tf.active:
        if tf.match != "prefix":
            if tf.mode == "all":
                must += [field("tags_lower", one(t)) for t in tf.lowered]
            else:
                must.append(field("tags_lower", any_of(tf.lowered)))
        # A prefix is in tag_prefixes or is a whole tag (tags_lower): an Edge point keeps
        # only the prefixes that are not whole tags natively (EDGE_COVERED_FIELDS), a server
        # point all of them; asking both fields matches the same points either way.
        elif tf.mode == "all":
            must += [either([field("tag_prefixes", one(t)), field("tags_lower", one(t))]) for t in tf.lowered]
        else:
            must.append(either([field("tag_prefixes", any_of(tf.lowered)), field("tags_lower", any_of(tf.lowered))]))
    if scope.start_epoch is not None or scope.end_epoch is not None:
        must.append(range_("timestamp_epoch", scope.start_epoch, scope.end_epoch))
    if scope.exclude_tags:
        must_not.append(field("tag_prefixes", any_of(scope.excluded_lowered)))
        must_not.append(field("tags_lower", any_of(scope.excluded_lowered)))
    if exclusions:
        if scope.excluded_types:
            must_not.append(field("type", any_of(sorted(scope.excluded_types))))
        must_not.append(field("lifecycle", one(ARCHIVED)))
    return combine(must, must_not)


def is_excluded(payload: dict[str, Any], scope: Scope) -> bool:
    """The exclusions of ``build_filter``, checked on a hit's payload."""
    return payload.get("lifecycle") == ARCHIVED or payload.get("type") in scope.excluded_types


def vector_payload(memory: dict[str, Any]) -> dict[str, Any]:
    """What a point carries besides its vector: what recall filters and scores on."""
    # Without metadata: its storage-only forms (JSON, search text) are not wanted here, and
    # computing them only to drop them would be a measurable share of the persist stage.
    props = node_properties({name: value for name, value in memory.items() if name != "metadata"})
    props["memory_id"] = memory["id"]
    props["metadata"] = memory.get("metadata") or {}
    props["tags_lower"] = [t.lower() for t in memory.get("tags") or []]
    props["archived"] = bool(memory.get("archived", False))
    if props["archived"]:
        props["archived_at"] = memory.get("archived_at") or "archived"
    props["lifecycle"] = ARCHIVED if props["archived"] else "active"
    return props


def _as_stored(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` as a point holds it: JSON values, and no null fields (a null field and an
    absent one filter alike; the graph keeps no null property, a new memory's payload names them)."""
    return {name: value for name, value in orjson.loads(orjson.dumps(payload)).items() if value is not None}


def payload_changed(wanted: dict[str, Any], stored: dict[str, Any]) -> bool:
    """Would writing ``wanted`` over a point whose payload reads back as ``stored`` change it?"""
    return _as_stored(wanted) != _as_stored(stored)
