"""The vector index behind one protocol, with two backends.

- ``EdgeVectorStore``: Qdrant Edge in-process (the embedded default). A shard belongs to one
  process, so only the web process opens it.
- ``QdrantServerVectorStore``: a Qdrant server through ``qdrant-client`` (``QDRANT_URL``);
  ``:memory:`` selects qdrant-client's local mode, which tests use as the server stand-in.

FalkorDB is the record; everything here can be rebuilt from it by re-embedding.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from pipeline import edge_text, shard_lock
from pipeline.config import Settings
from pipeline.edge_payload import PackedPayload, needs_document, pack_payload, unpack_payload
from pipeline.errors import VectorSizeMismatch
from pipeline.graph import Scope, node_properties
from pipeline.records import point_id_for

# Payload fields recall filters on, and the index each gets.
KEYWORD_INDEXES = ("memory_id", "tags_lower", "tag_prefixes", "type", "lifecycle")
FLOAT_INDEXES = ("timestamp_epoch", "importance")

log = logging.getLogger(__name__)
# Logged around every Edge index build: a build holds the shard (vector writes wait behind
# it) for seconds, so operators and the ingest benchmark need to see when one ran.
INDEX_BUILD_STARTED = "edge index build started"
INDEX_BUILD_FINISHED = "edge index build finished"
# What a Qdrant Edge point keeps as native payload fields (the rest is one JSON document):
# the indexed ones, ``content`` included (its scored text index is keyword search, see
# pipeline.edge_text).
EDGE_NATIVE_FIELDS = frozenset(KEYWORD_INDEXES + FLOAT_INDEXES + (edge_text.TEXT_FIELD,))
# ``tag_prefixes`` natively without the whole tags (``tags_lower`` has them; filters ask both):
# see pipeline.edge_payload.
EDGE_COVERED_FIELDS = {"tag_prefixes": "tags_lower"}
# Every search excludes archived points. A keyword ``lifecycle`` field carries that state: a
# keyword must_not is served from its index (~0.7 ms at 5k points), where the same check on
# a bool index measured 24-37 ms.
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


def edge_packed_payload(payload: dict[str, Any]) -> PackedPayload:
    """``payload`` in the Qdrant Edge layout, ready to write (``pipeline.edge_payload``)."""
    return PackedPayload(pack_payload(payload, EDGE_NATIVE_FIELDS, EDGE_COVERED_FIELDS))


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
    def close(self) -> None: ...
    def drop(self) -> None: ...  # delete the collection and everything in it (a finished migration's old one)
    # Maintenance (sync, consolidation, backup): paged reads and batched payload writes.
    def scroll(self, offset: str | None, limit: int, with_vectors: bool = False) -> tuple[list[VectorRecord], str | None]: ...
    def retrieve(self, memory_ids: list[str], with_vectors: bool = False) -> dict[str, VectorRecord]: ...
    def set_payloads(self, payloads: dict[str, dict[str, Any]]) -> None: ...
    def count_memories(self, excluded_types: frozenset[str] = frozenset()) -> int: ...


def _mismatch(found: Any, wanted: int) -> VectorSizeMismatch:
    return VectorSizeMismatch(
        f"the vector collection stores {found}-dimensional vectors but the embedding provider "
        f"produces {wanted} (VECTOR_SIZE/EMBEDDING_PROVIDER changed?). Re-embed into a new "
        "collection (QDRANT_COLLECTION) or restore the previous provider."
    )


def _record(raw_id: Any, payload: dict[str, Any] | None, vector: Any) -> VectorRecord:
    payload = payload or {}
    return VectorRecord(payload.get("memory_id") or str(raw_id), payload, list(vector) if vector is not None else None)


def _build_filter(scope: Scope, *, field, one, any_of, range_, combine, either, exclusions: bool = True):
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


def _dense(vector: Any) -> list[float] | None:
    """A returned point's vector: the unnamed dense one (Edge may return a name → vector map)."""
    if isinstance(vector, dict):
        vector = vector.get("") if "" in vector else next(iter(vector.values()), None)
    return list(vector) if vector is not None else None


def _as_list(vector: Any) -> list[float]:
    """qdrant-client wants a list; the vector stage hands Edge ``array('f')`` (packing.unpack_vector_f32)."""
    return vector if isinstance(vector, list) else list(vector)


def is_excluded(payload: dict[str, Any], scope: Scope) -> bool:
    """The exclusions of ``_build_filter``, checked on a hit's payload."""
    return payload.get("lifecycle") == ARCHIVED or payload.get("type") in scope.excluded_types


def _edge_hit(point: Any, with_payload: bool) -> VectorHit:
    """An Edge search hit; without ``with_payload`` only its id (the exclusion check's fields dropped)."""
    memory_id = point.payload["memory_id"]
    payload = unpack_payload(point.payload) if with_payload else {"memory_id": memory_id}
    return VectorHit(memory_id, float(point.score), payload)


class EdgeVectorStore:
    backend = "qdrant-edge"

    def __init__(self, path: str, vector_size: int, optimize_min_changes: int = 500, optimize_quiet_s: float = 0.0,
                 payload_memory: str = "pinned", text_backfill: bool = False):
        import qdrant_edge as qe

        self._qe = qe
        self._path = path
        self._size = vector_size
        # Recall reads the payload of every hit (40-80 per query); from the default on-disk
        # storage each fresh point costs ~55 us here, from RAM next to nothing (docs/recall.md).
        self._payload_memory = payload_memory
        self._optimize_min_changes = optimize_min_changes
        self._changes = 0
        self._optimize_quiet_s = optimize_quiet_s
        self._last_change = 0.0
        self._optimize_lock = threading.Lock()
        self._payload_lock = threading.Lock()
        self._shard = None
        self._text_ready = False  # every point's content in the scored text index (pipeline.edge_text)
        # An older shard's one-off repack, then a full index build that stalls the process (the
        # build holds the GIL): automatic only where the caller allows it (EDGE_TEXT_BACKFILL).
        self._text_backfill = text_backfill

    def ensure_collection(self) -> None:
        qe = self._qe
        config = qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=self._size, distance=qe.Distance.Cosine),
                               payload_memory=getattr(qe.Memory, self._payload_memory.capitalize()))
        fresh = False
        if self._shard is None:  # once open in this process it stays open (a shard opens once)
            shard_lock.acquire(self._path)  # refuses, naming the holder, when another process owns it
            try:
                fresh = self._open(config)
            except BaseException:
                shard_lock.release(self._path)
                raise
        for name in KEYWORD_INDEXES:
            self._shard.update(qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Keyword))
        for name in FLOAT_INDEXES:
            self._shard.update(qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Float))
        version = edge_text.VERSION if fresh else edge_text.marker_version(self._path)
        edge_text.ensure_index(self._shard, qe, rebuild=0 < version < edge_text.VERSION)
        if fresh:
            edge_text.write_marker(self._path)
        # An older shard answers keyword search from the graph until maintain() has repacked it.
        self._text_ready = version == edge_text.VERSION

    def _open(self, config) -> bool:
        """Load the shard, or create it where there is none; True when created."""
        import os

        qe = self._qe
        if os.path.isdir(self._path) and os.listdir(self._path):
            if self._persisted_payload_memory() != self._payload_memory:
                # Edge converts existing segments only when it rebuilds them: ask for one
                # index build, which the maintenance thread runs once writes are quiet.
                self._changes = max(self._changes, self._optimize_min_changes)
            try:
                self._shard = qe.EdgeShard.load(self._path, config)
            except Exception as exc:  # the binding raises a generic runtime error
                if "vector size" in str(exc):
                    raise _mismatch("a different number of", self._size) from exc
                raise
            return False
        os.makedirs(self._path, exist_ok=True)
        self._shard = qe.EdgeShard.create(self._path, config)
        return True

    @property
    def text_ready(self) -> bool:
        return self._text_ready

    def backfill_text(self) -> int:
        """Bring every point's content into the text index (once per shard); returns points rewritten."""
        if self._text_ready:
            return 0
        rewritten = edge_text.backfill(self._shard, self._qe, self._pack, self._payload_lock)
        # A payload update moves the point out of its indexed segment into the appendable one,
        # where dense search is a full scan (100k points: 12 ms a search instead of ~2): the
        # rewritten points count as changes, so the index is built again (maintain() goes on to it).
        self._changes += rewritten
        self._last_change = time.monotonic()
        self._shard.flush()
        edge_text.write_marker(self._path)
        self._text_ready = True
        return rewritten

    def _persisted_payload_memory(self) -> str:
        """The payload placement the shard was last opened with (``cold`` when it never said)."""
        import json
        import os

        try:
            with open(os.path.join(self._path, "edge_config.json"), encoding="utf-8") as handle:
                return str(json.load(handle).get("payload_memory") or "cold")
        except (OSError, ValueError):
            return "cold"

    def _filter(self, query: VectorQuery, exclusions: bool = True):
        qe = self._qe
        return _build_filter(
            query.scope, exclusions=exclusions,
            field=lambda key, match: qe.FieldCondition(key=key, match=match),
            one=qe.MatchValue,
            any_of=qe.MatchAny,
            range_=lambda key, gte, lte: qe.FieldCondition(key=key, range=qe.RangeFloat(gte=gte, lte=lte)),
            either=lambda conditions: qe.Filter(should=conditions),
            # no conditions: no filter at all, so the search takes its unfiltered path
            combine=lambda must, must_not: qe.Filter(must=must or None, must_not=must_not or None) if must or must_not else None,
        )

    def upsert(self, points: list[VectorPoint]) -> None:
        qe = self._qe
        built = [qe.Point(p.point_id or point_id_for(p.memory_id), p.vector, self._pack(p.payload)) for p in points]
        with self._payload_lock:  # never between a payload merge's read and its write
            self._shard.update(qe.UpdateOperation.upsert_points(built))
        self._changes += len(points)
        self._last_change = time.monotonic()

    def delete(self, memory_ids: list[str]) -> None:
        self._shard.update(self._qe.UpdateOperation.delete_points([point_id_for(m) for m in memory_ids]))
        self._changes += len(memory_ids)
        self._last_change = time.monotonic()

    @staticmethod
    def _pack(payload: dict[str, Any]) -> dict[str, Any]:
        if isinstance(payload, PackedPayload):
            return payload  # packed by the sender (the persist stage)
        return pack_payload(payload, EDGE_NATIVE_FIELDS, EDGE_COVERED_FIELDS)  # see pipeline.edge_payload

    def set_payload(self, memory_id: str, payload: dict[str, Any]) -> None:
        self.set_payloads({memory_id: payload})

    def search(self, query: VectorQuery) -> list[VectorHit]:
        """Nearest points in scope, archived and excluded types never among them.

        Optimistic: the HNSW walk checks every filter condition at every node it visits, and
        the two exclusions nearly always match nothing (at 100k points they cost ~40 % of a
        search). So the search runs without them first; only when a hit is archived or of an
        excluded type does it run again with the full filter. When no hit is excluded, the
        top ``limit`` of all points in scope are the top ``limit`` of the admissible ones.
        """
        qe = self._qe
        with_payload = True if query.with_payload else qe.PayloadSelector.Include(["memory_id", "lifecycle", "type"])

        def run(exclusions: bool):
            return self._shard.search(qe.SearchRequest(
                query=qe.Query.Nearest(query.vector), limit=query.limit, filter=self._filter(query, exclusions),
                with_payload=with_payload,
            ))
        hits = run(exclusions=False)
        if any(is_excluded(h.payload, query.scope) for h in hits):
            hits = run(exclusions=True)
        return [_edge_hit(h, query.with_payload) for h in hits]

    def search_many(self, queries: list[VectorQuery]) -> list[list[VectorHit]]:
        """Many searches in one call: measured here at 12k unindexed points, half the CPU per
        search of one call each (the engine scans the segment once for the whole batch).

        Optimistic about the two exclusions, as ``search``: the batch runs without them, and
        only the queries with an archived or excluded hit run again with the full filter.
        """
        if not queries:
            return []
        qe = self._qe

        def request(query: VectorQuery, exclusions: bool):
            with_payload = True if query.with_payload else qe.PayloadSelector.Include(["memory_id", "lifecycle", "type"])
            return qe.QueryRequest(limit=query.limit, query=qe.Query.Nearest(query.vector),
                                   filter=self._filter(query, exclusions), with_payload=with_payload)

        results = list(self._shard.query_batch(qe.QueryBatchRequest([request(q, False) for q in queries])))
        again = [i for i, (q, hits) in enumerate(zip(queries, results)) if any(is_excluded(h.payload, q.scope) for h in hits)]
        if again:
            rerun = self._shard.query_batch(qe.QueryBatchRequest([request(queries[i], True) for i in again]))
            for i, hits in zip(again, rerun):
                results[i] = hits
        return [[_edge_hit(h, q.with_payload) for h in hits] for q, hits in zip(queries, results)]

    def text_search(self, text: str, scope: Scope, limit: int) -> list[VectorHit] | None:
        """The ``limit`` best BM25 matches of ``text`` in scope, with payloads and vectors.

        Scored by Edge over the whole shard (IDF among all memories, document lengths as
        indexed), filtered as the dense search is. Optimistic about the two exclusions, as
        ``search`` is: without them first, again with them only when a hit is excluded.
        """
        if not self._text_ready:
            return None
        qe = self._qe
        query = VectorQuery([], limit, scope)

        def run(exclusions: bool):
            return self._shard.query(qe.QueryRequest(
                limit=limit, query=qe.TextQuery(edge_text.TEXT_FIELD, text),
                filter=self._filter(query, exclusions), with_payload=True, with_vector=True,
            ))
        hits = run(exclusions=False)
        if any(is_excluded(h.payload, scope) for h in hits):
            hits = run(exclusions=True)
        return [VectorHit(h.payload["memory_id"], float(h.score), unpack_payload(h.payload), _dense(h.vector))
                for h in hits]

    def count(self) -> int:
        return int(self._shard.count(self._qe.CountRequest(exact=True)))

    def scroll(self, offset: str | None, limit: int, with_vectors: bool = False) -> tuple[list[VectorRecord], str | None]:
        records, next_offset = self._shard.scroll(
            self._qe.ScrollRequest(offset=offset, limit=limit, with_payload=True, with_vector=with_vectors)
        )
        page = [_record(r.id, unpack_payload(r.payload), r.vector if with_vectors else None) for r in records]
        return page, (str(next_offset) if next_offset is not None else None)

    def retrieve(self, memory_ids: list[str], with_vectors: bool = False) -> dict[str, VectorRecord]:
        if not memory_ids:
            return {}
        records = self._shard.retrieve([point_id_for(m) for m in memory_ids], with_payload=True, with_vector=with_vectors)
        found = (_record(r.id, unpack_payload(r.payload), r.vector if with_vectors else None) for r in records)
        return {r.memory_id: r for r in found}

    def set_payloads(self, payloads: dict[str, dict[str, Any]]) -> None:
        # A field kept in the packed document is merged into the stored one (read, merge,
        # write), under a lock so two threads of this process cannot interleave on a point.
        with self._payload_lock:
            merge = [m for m, p in payloads.items() if needs_document(p, EDGE_NATIVE_FIELDS, EDGE_COVERED_FIELDS)]
            stored = self.retrieve(merge) if merge else {}
            # Edge applies one operation per call; in-process, so a loop costs microseconds each.
            for memory_id, payload in payloads.items():
                if memory_id in stored:
                    payload = {**stored[memory_id].payload, **payload}
                self._shard.update(self._qe.UpdateOperation.set_payload([point_id_for(memory_id)], self._pack(payload)))

    def count_memories(self, excluded_types: frozenset[str] = frozenset()) -> int:
        qe = self._qe
        if not excluded_types:
            return self.count()
        flt = qe.Filter(must_not=[qe.FieldCondition(key="type", match=qe.MatchAny(sorted(excluded_types)))])
        return int(self._shard.count(qe.CountRequest(exact=True, filter=flt)))

    def ping(self) -> bool:
        return self._shard is not None

    def build_due(self) -> bool:
        """Would ``maintain`` build the index now (enough changes, writes quiet)?"""
        return (self._changes >= self._optimize_min_changes
                and time.monotonic() - self._last_change >= self._optimize_quiet_s)

    def pending_changes(self) -> int:
        """Points written or deleted since the last index build (what the next one indexes)."""
        return self._changes

    def maintain(self) -> None:
        """Build the HNSW index when enough has changed. Blocks: call it off the request path."""
        if not self._text_ready and self._text_backfill and self._optimize_lock.acquire(blocking=False):
            try:  # an older shard's one-off migration (pipeline.edge_text)
                self.backfill_text()
            finally:
                self._optimize_lock.release()
        if self._changes < self._optimize_min_changes:
            return
        # optimize() holds the shard for seconds (tens at bulk sizes): during a bulk import it
        # would stall every upsert behind it, so wait until writes have paused.
        if time.monotonic() - self._last_change < self._optimize_quiet_s:
            return
        if not self._optimize_lock.acquire(blocking=False):
            return
        try:
            changes, self._changes = self._changes, 0
            started = time.monotonic()
            log.info(INDEX_BUILD_STARTED, extra={"changes": changes})
            self._shard.optimize()
            self._shard.flush()
            log.info(INDEX_BUILD_FINISHED, extra={"changes": changes, "seconds": round(time.monotonic() - started, 2)})
        finally:
            self._optimize_lock.release()

    def close(self) -> None:
        if self._shard is not None:
            self._shard.flush()
            self._shard.close()
            self._shard = None
            shard_lock.release(self._path)

    def drop(self) -> None:
        import shutil

        with self._optimize_lock:
            if self._shard is not None:
                self._shard.close()
                self._shard = None
                shard_lock.release(self._path)
            shutil.rmtree(self._path, ignore_errors=True)


class QdrantServerVectorStore:
    backend = "qdrant-server"

    def __init__(self, client, collection: str, vector_size: int):
        from qdrant_client import models

        self._client = client
        self._models = models
        self._collection = collection
        self._size = vector_size

    @staticmethod
    def client_for(settings: Settings):
        from qdrant_client import QdrantClient

        if settings.qdrant_url == ":memory:":
            return QdrantClient(":memory:")
        if settings.qdrant_url.startswith("local:"):  # local mode on disk: one process, survives restarts
            return QdrantClient(path=settings.qdrant_url.removeprefix("local:"))
        return QdrantClient(url=settings.qdrant_url, api_key=settings.qdrant_api_key, timeout=10)

    @classmethod
    def connect(cls, settings: Settings, vector_size: int) -> "QdrantServerVectorStore":
        return cls(cls.client_for(settings), settings.qdrant_collection, vector_size)

    def ensure_collection(self) -> None:
        m = self._models
        if self._client.collection_exists(self._collection):
            params = self._client.get_collection(self._collection).config.params.vectors
            size = params.size if hasattr(params, "size") else None
            if size != self._size:
                raise _mismatch(size, self._size)
        else:
            self._client.create_collection(
                self._collection, vectors_config=m.VectorParams(size=self._size, distance=m.Distance.COSINE)
            )
        for name in KEYWORD_INDEXES:
            self._client.create_payload_index(self._collection, name, m.PayloadSchemaType.KEYWORD)
        for name in FLOAT_INDEXES:
            self._client.create_payload_index(self._collection, name, m.PayloadSchemaType.FLOAT)

    def _filter(self, query: VectorQuery):
        m = self._models
        return _build_filter(
            query.scope,
            field=lambda key, match: m.FieldCondition(key=key, match=match),
            one=lambda value: m.MatchValue(value=value),
            any_of=lambda values: m.MatchAny(any=values),
            range_=lambda key, gte, lte: m.FieldCondition(key=key, range=m.Range(gte=gte, lte=lte)),
            either=lambda conditions: m.Filter(should=conditions),
            combine=lambda must, must_not: m.Filter(must=must or None, must_not=must_not or None),
        )

    def upsert(self, points: list[VectorPoint]) -> None:
        structs = [
            self._models.PointStruct(id=point_id_for(p.memory_id), vector=_as_list(p.vector), payload=plain_payload(p.payload))
            for p in points
        ]
        self._client.upsert(self._collection, structs, wait=True)

    def delete(self, memory_ids: list[str]) -> None:
        self._client.delete(
            self._collection, self._models.PointIdsList(points=[point_id_for(m) for m in memory_ids]), wait=True
        )

    def set_payload(self, memory_id: str, payload: dict[str, Any]) -> None:
        self._client.set_payload(self._collection, payload, points=[point_id_for(memory_id)], wait=True)

    def search(self, query: VectorQuery) -> list[VectorHit]:
        response = self._client.query_points(
            self._collection, query=_as_list(query.vector), limit=query.limit, query_filter=self._filter(query),
            with_payload=True if query.with_payload else ["memory_id"],
        )
        return [VectorHit(p.payload["memory_id"], float(p.score), p.payload) for p in response.points]

    def text_search(self, text: str, scope: Scope, limit: int) -> list[VectorHit] | None:
        """Not offered: keyword search goes to the graph's full-text index."""
        return None

    def search_many(self, queries: list[VectorQuery]) -> list[list[VectorHit]]:
        if not queries:
            return []
        requests = [
            self._models.QueryRequest(query=_as_list(q.vector), limit=q.limit, filter=self._filter(q),
                                      with_payload=True if q.with_payload else ["memory_id"])
            for q in queries
        ]
        responses = self._client.query_batch_points(self._collection, requests=requests)
        return [[VectorHit(p.payload["memory_id"], float(p.score), p.payload) for p in r.points] for r in responses]

    def count(self) -> int:
        return int(self._client.count(self._collection, exact=True).count)

    def scroll(self, offset: str | None, limit: int, with_vectors: bool = False) -> tuple[list[VectorRecord], str | None]:
        records, next_offset = self._client.scroll(
            self._collection, limit=limit, offset=offset, with_payload=True, with_vectors=with_vectors
        )
        page = [_record(r.id, r.payload, r.vector if with_vectors else None) for r in records]
        return page, (str(next_offset) if next_offset is not None else None)

    def retrieve(self, memory_ids: list[str], with_vectors: bool = False) -> dict[str, VectorRecord]:
        if not memory_ids:
            return {}
        records = self._client.retrieve(
            self._collection, [point_id_for(m) for m in memory_ids], with_payload=True, with_vectors=with_vectors
        )
        found = (_record(r.id, r.payload, r.vector if with_vectors else None) for r in records)
        return {r.memory_id: r for r in found}

    def set_payloads(self, payloads: dict[str, dict[str, Any]]) -> None:
        if not payloads:
            return
        m = self._models
        operations = [
            m.SetPayloadOperation(set_payload=m.SetPayload(payload=payload, points=[point_id_for(memory_id)]))
            for memory_id, payload in payloads.items()
        ]
        self._client.batch_update_points(self._collection, operations, wait=True)

    def count_memories(self, excluded_types: frozenset[str] = frozenset()) -> int:
        m = self._models
        flt = None
        if excluded_types:
            flt = m.Filter(must_not=[m.FieldCondition(key="type", match=m.MatchAny(any=sorted(excluded_types)))])
        return int(self._client.count(self._collection, count_filter=flt, exact=True).count)

    def ping(self) -> bool:
        self._client.get_collections()
        return True

    def maintain(self) -> None:
        """The server optimises on its own."""

    def close(self) -> None:
        self._client.close()

    def drop(self) -> None:
        if self._client.collection_exists(self._collection):
            self._client.delete_collection(self._collection)


def build_vector_store(settings: Settings, vector_size: int, collection: str | None = None, client=None) -> VectorStore:
    """A store for ``collection`` (default ``QDRANT_COLLECTION``); server stores may share one ``client``."""
    name = collection or settings.qdrant_collection
    if settings.uses_qdrant_edge:
        return EdgeVectorStore(
            str(settings.edge_path.parent / name), vector_size, settings.edge_optimize_min_changes,
            settings.edge_optimize_quiet_s, settings.edge_payload_memory, settings.edge_text_backfill,
        )
    return QdrantServerVectorStore(client or QdrantServerVectorStore.client_for(settings), name, vector_size)


def vector_payload(memory: dict[str, Any]) -> dict[str, Any]:
    """What a point carries besides its vector: what recall filters and scores on."""
    # Without metadata: its storage-only forms (JSON, search text) are not wanted here, and
    # computing them only to drop them was a measurable share of the persist stage.
    props = node_properties({name: value for name, value in memory.items() if name != "metadata"})
    props["memory_id"] = memory["id"]
    props["metadata"] = memory.get("metadata") or {}
    props["tags_lower"] = [t.lower() for t in memory.get("tags") or []]
    props["archived"] = bool(memory.get("archived", False))
    if props["archived"]:
        props["archived_at"] = memory.get("archived_at") or "archived"
    if memory.get("relevance_score") is not None:  # set by the decay cycle; recall's relevance component
        props["relevance_score"] = float(memory["relevance_score"])
    props["lifecycle"] = ARCHIVED if props["archived"] else "active"
    return props
