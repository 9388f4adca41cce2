"""The Qdrant Edge backend: the vector index in-process (the embedded default).

A shard belongs to one process (``pipeline.vectors.shard_lock``, ``pipeline.vectors.edge_owner``),
so only the web process opens it. Payloads are stored packed (``pipeline.vectors.edge_payload``)
and keyword search runs on the shard's text index (``pipeline.vectors.edge_text``).
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from typing import Any, Callable, Iterator

from pipeline.foreground import never_wait
from pipeline.graph import Scope
from pipeline.records import point_id_for
from pipeline.settings_groups import (
    EDGE_CODES_BUILD_MIN_CHANGES,
    EDGE_OPTIMIZE_MIN_CHANGES,
    EDGE_OPTIMIZE_MIN_SHARE,
    EDGE_PAYLOAD_INDEXES_ON_DISK,
    EDGE_VECTOR_CODES,
    EDGE_VECTORS_ON_DISK,
)
from pipeline.vectors import edge_swap, edge_text, shard_files, shard_generations, shard_lock
from pipeline.vectors.edge_swap import ChildBuild, ChildBuildOptions
from pipeline.vectors.edge_payload import PackedPayload, needs_document, pack_payload, unpack_payload
from pipeline.vectors.rw_guard import ReadWriteGuard
from pipeline.vectors.store import (
    FLOAT_INDEXES,
    KEYWORD_INDEXES,
    VectorHit,
    VectorPoint,
    VectorQuery,
    VectorRecord,
    build_filter,
    is_excluded,
    size_mismatch,
    stored_record,
)

log = logging.getLogger(__name__)
# Logged around every Edge index build: a build holds the shard (vector writes wait behind
# it) for seconds, so operators and the ingest benchmark need to see when one ran.
INDEX_BUILD_STARTED = "edge index build started"
INDEX_BUILD_FINISHED = "edge index build finished"
INDEX_BUILD_FAILED = "edge index build failed; the live shard is untouched"
OLD_SHARD_CLOSE_FAILED = "edge index swap: the replaced shard did not close cleanly; the new one is live"
PAYLOAD_INDEXES_SLOW = "edge payload indexes took a while to ensure (rebuilt for changed parameters?)"
# Ensuring indexes that are as asked takes milliseconds; rebuilding them (EDGE_PAYLOAD_INDEXES_ON_DISK
# changed, or the first start after the upgrade that made them mapped) takes seconds per 100k
# points and delays the start: say so in the log.
PAYLOAD_INDEXES_SLOW_S = 1.0
# The changes since the last build, written beside the shard's files at each flush and at
# close: Qdrant's own counts take a point an update moved out of the index for indexed, so a
# restart that forgot them would owe no build and batch searches as if nothing were unindexed.
CHANGES_FILE = "mempipe_changes.json"
# qdrant_edge holds the GIL for each call, searches included: ``search_many`` splits a batch so
# that one call scans about this many unindexed points (and runs at most SEARCH_BATCH_MAX
# queries), so a SIMILAR_TO batch of hundreds of searches over a plain shard leaves the
# process's other threads (recall, /health) a turn between calls, and a recall that arrives
# during a call waits for the rest of that one call only (tens of milliseconds a call: the
# measurements are in docs/benchmarks-log.md, issue 21, session 37).
SEARCH_BATCH_SCAN_POINTS = 250_000
SEARCH_BATCH_MAX = 64
# A search of a built segment's HNSW graph (with the codes' rescoring) costs about what a scan
# of this many unindexed points does (an estimate from two timings): the scan bound above
# counts it, so that a batch over a built shard with few unindexed points is not 64 graph
# walks in one call, which a recall arriving meanwhile waits for (docs/benchmarks-log.md,
# issue 21, session 50).
SEARCH_GRAPH_SCAN_POINTS = 20_000
# Points per ``update`` call of an upsert: each call holds the GIL (with building its points,
# ~60 us a point), and the process's foreground requests get their turn between calls
# (``give_way``, pipeline.foreground): 128 points hold it ~5-10 ms.
UPSERT_CHUNK = 128
# Points per step of a payload write (enrichment's refresh, decay, drift repair): each point is
# its own call, so the GIL changes hands between them anyway; between steps the write also
# gives way to foreground requests, instead of sharing the GIL with a recall for the whole batch.
PAYLOAD_CHUNK = 32
# Every field the shard indexes, ``content`` included (its scored text index is keyword search,
# see pipeline.vectors.edge_text); a replaced shard's indexes are dropped one by one before it closes.
INDEXED_FIELDS = KEYWORD_INDEXES + FLOAT_INDEXES + (edge_text.TEXT_FIELD,)
# What a Qdrant Edge point keeps as native payload fields (the rest is one JSON document): the indexed ones.
EDGE_NATIVE_FIELDS = frozenset(INDEXED_FIELDS)
# ``tag_prefixes`` natively without the whole tags (``tags_lower`` has them; filters ask both):
# see pipeline.vectors.edge_payload.
EDGE_COVERED_FIELDS = {"tag_prefixes": "tags_lower"}


def edge_packed_payload(payload: dict[str, Any]) -> PackedPayload:
    """``payload`` in the Qdrant Edge layout, ready to write (``pipeline.vectors.edge_payload``)."""
    return PackedPayload(pack_payload(payload, EDGE_NATIVE_FIELDS, EDGE_COVERED_FIELDS))



def _dense(vector: Any) -> list[float] | None:
    """A returned point's vector: the unnamed dense one (Edge may return a name → vector map)."""
    if isinstance(vector, dict):
        vector = vector.get("") if "" in vector else next(iter(vector.values()), None)
    return list(vector) if vector is not None else None



def _edge_hit(point: Any, with_payload: bool) -> VectorHit:
    """An Edge search hit; without ``with_payload`` only its id (the exclusion check's fields dropped)."""
    memory_id = point.payload["memory_id"]
    payload = unpack_payload(point.payload) if with_payload else {"memory_id": memory_id}
    return VectorHit(memory_id, float(point.score), payload)



def saved_changes(shard_path: str) -> int:
    """The changes owed an index build that the shard's directory records (0 when none)."""
    try:
        return max(0, int(shard_files.read(shard_path, CHANGES_FILE).get("changes") or 0))
    except (TypeError, ValueError):
        return 0


def saved_codes_only(shard_path: str) -> bool:
    """Does the shard's directory record that its last build was codes-only (no HNSW graph)?"""
    return shard_files.read(shard_path, CHANGES_FILE).get("codes_only") is True


class EdgeVectorStore:
    backend = "qdrant-edge"

    def __init__(self, path: str, vector_size: int, optimize_min_changes: int = EDGE_OPTIMIZE_MIN_CHANGES,
                 optimize_quiet_s: float = 0.0, payload_memory: str = "pinned", text_backfill: bool = False,
                 plain_max_points: int = 0, give_way: Callable[[], bool] = never_wait, child_build: ChildBuildOptions | None = None,
                 optimize_min_share: float = EDGE_OPTIMIZE_MIN_SHARE, vector_codes: str = EDGE_VECTOR_CODES,
                 codes_build_min_changes: int = EDGE_CODES_BUILD_MIN_CHANGES, vectors_on_disk: bool = EDGE_VECTORS_ON_DISK,
                 payload_indexes_on_disk: bool = EDGE_PAYLOAD_INDEXES_ON_DISK):
        import qdrant_edge as qe

        self._qe = qe
        self._path = path
        self._size = vector_size
        # Recall reads the payload of every hit (40-80 per query); from the default on-disk
        # storage each fresh point costs a read, from RAM next to nothing (docs/recall.md).
        self._payload_memory = payload_memory
        self._layout = edge_swap.ShardLayout(vector_size, payload_memory, vector_codes, vectors_on_disk)
        self._search_params = self._layout.search_params(qe)
        # Built segments' payload indexes: memory-mapped, or rebuilt in the heap at every open
        # (most of what opening a built shard costs, and the swap's pause waits for it).
        self._index_memory = qe.Memory.Cold if payload_indexes_on_disk else qe.Memory.Pinned
        self._optimize_min_changes = optimize_min_changes
        self._optimize_min_share = optimize_min_share
        # Up to this many points the shard gets no HNSW graph (0: always built) and a search
        # scans it, because qdrant_edge holds the GIL for a whole HNSW build and the process
        # that owns the shard (the web) answers nothing meanwhile.
        self._plain_max_points = plain_max_points
        # Below the plain size, a codes-only build (int8 codes, no HNSW graph: a linear pass) in a
        # child process once this many points changed since the last build: a search then scans
        # a byte a dimension instead of four. Needs the codes and a child to build (0: never).
        self._codes_builds = bool(codes_build_min_changes and vector_codes == "int8" and child_build is not None)
        self._codes_build_min_changes = codes_build_min_changes
        # The last build was codes-only: past the plain size the next build is due whatever
        # changed, to give those segments their graph.
        self._codes_only = False
        # A payload-placement change is applied only by a rebuild: that one build runs at any size.
        self._conversion_due = False
        self._changes = 0
        # Writes since the last flush. Until a flush the shard's segments on disk lag behind its
        # write-ahead log, and opening the shard replays every logged write since: an unflushed
        # 100k import is replayed point by point at the next start (persist(); docs/deployment.md).
        self._unflushed = 0
        self._optimize_quiet_s = optimize_quiet_s
        self._last_change = 0.0
        self._optimize_lock = threading.Lock()
        self._closing = threading.Event()  # set first thing by close(): a page-cache read in progress ends
        self._payload_lock = threading.Lock()
        self._shard = None
        self._text_ready = False  # every point's content in the scored text index (pipeline.vectors.edge_text)
        # An older shard's one-off repack, then a full index build that stalls the process (the
        # build holds the GIL): automatic only where the caller allows it (EDGE_TEXT_BACKFILL).
        self._text_backfill = text_backfill
        # Called before each step of work that runs outside a request (upsert chunks, search
        # batches, flushes): in the web it waits while a recall or /health is in flight.
        self._give_way = give_way
        # Where the index is built: None = optimize() in this process, past the plain size only
        # (the web answers nothing meanwhile); else a child process builds a copy that is
        # swapped in (pipeline.vectors.edge_swap).
        self._child_build = child_build
        self._build: ChildBuild | None = None  # the build in a child now running
        self._build_changes = 0  # the changes that build indexes (given back when it fails)
        self._build_retry_at = 0.0  # after a failed build: no other before this (monotonic)
        # Ids of the points written, deleted or re-payloaded since a build's copy was taken:
        # their current state is copied into the built shard before it goes live. None: no build.
        self._journal: set | None = None
        # Every call into the shard holds ``_access`` shared; the swap of a built shard holds it
        # alone. Vector writes (and flushes) also hold ``_writes`` shared; taking a build's copy
        # holds it alone, so writes wait while searches go on. Order: _writes, then _access.
        self._access = ReadWriteGuard()
        self._writes = ReadWriteGuard()

    def _read(self, call: Callable[[], Any]) -> Any:
        """``call()`` under the shard guard; it must name ``self._shard`` inside (a swap replaces it)."""
        with self._access.shared():
            return call()

    def _journaled(self, point_ids: list) -> None:
        """Record written ids for the build in flight (call holding ``_writes`` shared)."""
        if self._journal is not None:
            self._journal.update(point_ids)

    def _unindexed_changes(self) -> int:
        """The changes the live shard's index lacks: those since the last build, and those a
        build in a child indexes (until its swap they are unindexed here; it may never finish)."""
        return self._changes + (self._build_changes if self._build is not None else 0)

    def _save_changes(self) -> None:
        shard_files.write(self._path, CHANGES_FILE, {"changes": self._unindexed_changes(), "codes_only": self._codes_only})

    def ensure_collection(self) -> None:
        qe = self._qe
        config = self._layout.config(qe)
        fresh = False
        if self._shard is None:  # once open in this process it stays open (a shard opens once)
            shard_lock.acquire(self._path)  # refuses, naming the holder, when another process owns it
            self._closing.clear()  # open again after a close
            try:
                fresh = self._open(config)
            except BaseException:
                shard_lock.release(self._path)
                raise
        # Idempotent; an index made with other parameters is rebuilt here, once (it holds the GIL).
        started = time.monotonic()
        for name in KEYWORD_INDEXES:
            self._shard.update(qe.UpdateOperation.create_field_index(name, qe.KeywordIndexParams(memory=self._index_memory)))
        for name in FLOAT_INDEXES:
            self._shard.update(qe.UpdateOperation.create_field_index(name, qe.FloatIndexParams(memory=self._index_memory)))
        version = edge_text.VERSION if fresh else edge_text.marker_version(self._path)
        edge_text.ensure_index(self._shard, qe, self._index_memory, rebuild=0 < version < edge_text.VERSION)
        took = time.monotonic() - started
        if took >= PAYLOAD_INDEXES_SLOW_S:
            log.info(PAYLOAD_INDEXES_SLOW, extra={"seconds": round(took, 2), "on_disk": self._index_memory == qe.Memory.Cold})
        if fresh:
            edge_text.write_marker(self._path)
        # An older shard answers keyword search from the graph until maintain() has repacked it.
        self._text_ready = version == edge_text.VERSION

    def _open(self, config) -> bool:
        """Load the shard, or create it where there is none; True when created."""
        qe = self._qe
        edge_swap.recover(self._path)  # what a build or an earlier version's swap left (we hold the lock)
        shard_generations.adopt(self._path)  # a shard from before generations becomes the first
        shard_generations.recover(self._path)  # what an interrupted swap left
        live = shard_generations.live_dir(self._path)
        if os.path.isdir(live) and os.listdir(live):
            if self._persisted_payload_memory() != self._payload_memory:
                # Edge converts existing segments only when it rebuilds them: ask for one
                # index build, which the maintenance thread runs once writes are quiet.
                self._changes = max(self._changes, self._optimize_min_changes)
                self._conversion_due = True
            try:
                self._shard = qe.EdgeShard.load(live, config)
            except Exception as exc:  # the binding raises a generic runtime error
                if "vector size" in str(exc):
                    raise size_mismatch("a different number of", self._size) from exc
                raise
            self._changes = max(self._changes, saved_changes(self._path))
            self._codes_only = saved_codes_only(self._path)
            return False
        if not os.path.isdir(live):
            live = shard_generations.generation_dir(self._path, 0)
            os.makedirs(live, exist_ok=True)
            shard_generations.point_to(self._path, live)
        self._shard = qe.EdgeShard.create(live, config)
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
        # where dense search is a full scan: the rewritten points count as changes, so the index
        # is built again (maintain() goes on to it).
        self._changes += rewritten
        self._last_change = time.monotonic()
        self._shard.flush()
        edge_text.write_marker(self._path)
        self._text_ready = True
        return rewritten

    def _persisted_payload_memory(self) -> str:
        """The payload placement the shard was last opened with (``cold`` when it never said)."""
        return str(shard_files.read(self._path, "edge_config.json").get("payload_memory") or "cold")

    def _filter(self, query: VectorQuery, exclusions: bool = True):
        qe = self._qe
        return build_filter(
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
        for chunk in self._steps(points, UPSERT_CHUNK):  # short steps: see UPSERT_CHUNK
            point_ids = [p.point_id or point_id_for(p.memory_id) for p in chunk]
            built = [qe.Point(i, p.vector, self._pack(p.payload)) for i, p in zip(point_ids, chunk)]
            # the payload lock: never between a payload merge's read and its write
            with self._writes.shared(), self._access.shared(), self._payload_lock:
                self._shard.update(qe.UpdateOperation.upsert_points(built))
                self._journaled(point_ids)
            self._changes += len(chunk)
            self._unflushed += len(chunk)
            self._last_change = time.monotonic()

    def delete(self, memory_ids: list[str]) -> None:
        point_ids = [point_id_for(m) for m in memory_ids]
        with self._writes.shared(), self._access.shared():
            self._shard.update(self._qe.UpdateOperation.delete_points(point_ids))
            self._journaled(point_ids)
        self._changes += len(memory_ids)
        self._unflushed += len(memory_ids)
        self._last_change = time.monotonic()

    @staticmethod
    def _pack(payload: dict[str, Any]) -> dict[str, Any]:
        if isinstance(payload, PackedPayload):
            return payload  # packed by the sender (the persist stage)
        return pack_payload(payload, EDGE_NATIVE_FIELDS, EDGE_COVERED_FIELDS)  # see pipeline.vectors.edge_payload

    def set_payload(self, memory_id: str, payload: dict[str, Any]) -> None:
        self.set_payloads({memory_id: payload})

    def search(self, query: VectorQuery) -> list[VectorHit]:
        """Nearest points in scope, archived and excluded types never among them.

        Optimistic: the HNSW walk checks every filter condition at every node it visits, and
        the two exclusions nearly always match nothing, yet cost a large share of a search. So
        the search runs without them first; only when a hit is archived or of an excluded type
        does it run again with the full filter. When no hit is excluded, the
        top ``limit`` of all points in scope are the top ``limit`` of the admissible ones.
        """
        qe = self._qe
        with_payload = True if query.with_payload else qe.PayloadSelector.Include(["memory_id", "lifecycle", "type"])

        def run(exclusions: bool):
            request = qe.SearchRequest(query=qe.Query.Nearest(query.vector), limit=query.limit,
                                       filter=self._filter(query, exclusions), with_payload=with_payload,
                                       params=self._search_params)
            with self._access.shared():
                return self._shard.search(request)
        hits = run(exclusions=False)
        if any(is_excluded(h.payload, query.scope) for h in hits):
            hits = run(exclusions=True)
        return [_edge_hit(h, query.with_payload) for h in hits]

    def search_many(self, queries: list[VectorQuery]) -> list[list[VectorHit]]:
        """Many searches in one call: less CPU per search than one call each (the engine scans an
        unindexed segment once for the whole batch).

        Optimistic about the two exclusions, as ``search``: the batch runs without them, and
        only the queries with an archived or excluded hit run again with the full filter.
        """
        if not queries:
            return []
        qe = self._qe

        def request(query: VectorQuery, exclusions: bool):
            with_payload = True if query.with_payload else qe.PayloadSelector.Include(["memory_id", "lifecycle", "type"])
            return qe.QueryRequest(limit=query.limit, query=qe.Query.Nearest(query.vector),
                                   filter=self._filter(query, exclusions), with_payload=with_payload,
                                   params=self._search_params)

        step = self._search_batch_size()

        def batched(requests: list) -> list:
            out: list = []
            for chunk in self._steps(requests, step):  # each call holds the GIL: see SEARCH_BATCH_SCAN_POINTS
                with self._access.shared():
                    out += self._shard.query_batch(qe.QueryBatchRequest(chunk))
            return out

        results = batched([request(q, False) for q in queries])
        again = [i for i, (q, hits) in enumerate(zip(queries, results)) if any(is_excluded(h.payload, q.scope) for h in hits)]
        if again:
            rerun = batched([request(queries[i], True) for i in again])
            for i, hits in zip(again, rerun):
                results[i] = hits
        return [[_edge_hit(h, q.with_payload) for h in hits] for q, hits in zip(queries, results)]

    def _search_batch_size(self) -> int:
        """Queries per ``query_batch`` call: fewer the more unindexed points each one scans.

        ``indexed_vectors_count`` goes on counting a point that an update (a new payload too)
        moved out of its indexed segment, so the points changed since the last build (and those
        a child's build in flight indexes, until its swap) count as unindexed as well: after the
        swap of a 1M build, the 160k points enriched during it were taken for indexed and
        scanned by SIMILAR_TO 64 queries a call, each call holding the web's GIL for the whole scan.
        A walk of the graph counts as ``SEARCH_GRAPH_SCAN_POINTS`` scanned (none on a codes-only
        build, which has no graph)."""
        info = self._read(lambda: self._shard.info())
        unindexed = max(1, int(info.points_count) - int(info.indexed_vectors_count), self._unindexed_changes())
        graph = SEARCH_GRAPH_SCAN_POINTS if int(info.indexed_vectors_count) and not self._codes_only else 0
        return max(1, min(SEARCH_BATCH_MAX, SEARCH_BATCH_SCAN_POINTS // (unindexed + graph)))

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
            request = qe.QueryRequest(limit=limit, query=qe.TextQuery(edge_text.TEXT_FIELD, text),
                                      filter=self._filter(query, exclusions), with_payload=True, with_vector=True)
            with self._access.shared():
                return self._shard.query(request)
        hits = run(exclusions=False)
        if any(is_excluded(h.payload, scope) for h in hits):
            hits = run(exclusions=True)
        return [VectorHit(h.payload["memory_id"], float(h.score), unpack_payload(h.payload), _dense(h.vector))
                for h in hits]

    def count(self) -> int:
        with self._access.shared():
            return int(self._shard.count(self._qe.CountRequest(exact=True)))

    def scroll(self, offset: str | None, limit: int, with_vectors: bool = False,
               payload_fields: list[str] | None = None) -> tuple[list[VectorRecord], str | None]:
        with_payload = self._qe.PayloadSelector.Include(payload_fields) if payload_fields else True
        request = self._qe.ScrollRequest(offset=offset, limit=limit, with_payload=with_payload, with_vector=with_vectors)
        with self._access.shared():
            records, next_offset = self._shard.scroll(request)
        page = [stored_record(r.id, unpack_payload(r.payload), r.vector if with_vectors else None) for r in records]
        return page, (str(next_offset) if next_offset is not None else None)

    def retrieve(self, memory_ids: list[str], with_vectors: bool = False,
                 payload_fields: list[str] | None = None) -> dict[str, VectorRecord]:
        if not memory_ids:
            return {}
        with_payload = self._qe.PayloadSelector.Include(payload_fields) if payload_fields else True
        with self._access.shared():
            records = self._shard.retrieve([point_id_for(m) for m in memory_ids], with_payload=with_payload, with_vector=with_vectors)
        found = (stored_record(r.id, unpack_payload(r.payload), r.vector if with_vectors else None) for r in records)
        return {r.memory_id: r for r in found}

    def existing(self, memory_ids: list[str]) -> set[str]:
        by_point = {point_id_for(m): m for m in memory_ids}
        if not by_point:
            return set()
        with self._access.shared():
            records = self._shard.retrieve(list(by_point), with_payload=False, with_vector=False)
        return {by_point[str(r.id)] for r in records}

    def set_payloads(self, payloads: dict[str, dict[str, Any]]) -> None:
        # A field kept in the packed document is merged into the stored one (read, merge,
        # write), under a lock so two threads of this process cannot interleave on a point.
        for chunk in self._payload_steps(payloads):
            with self._writes.shared(), self._access.shared(), self._payload_lock:
                merge = [m for m, p in chunk.items() if needs_document(p, EDGE_NATIVE_FIELDS, EDGE_COVERED_FIELDS)]
                stored = self.retrieve(merge) if merge else {}
                self._write_payloads(self._qe.UpdateOperation.set_payload, {
                    memory_id: {**stored[memory_id].payload, **payload} if memory_id in stored else payload
                    for memory_id, payload in chunk.items()
                })

    def replace_payloads(self, payloads: dict[str, dict[str, Any]]) -> None:
        for chunk in self._payload_steps(payloads):
            with self._writes.shared(), self._access.shared(), self._payload_lock:
                self._write_payloads(self._qe.UpdateOperation.overwrite_payload, chunk)

    def _payload_steps(self, payloads: dict[str, dict[str, Any]]) -> Iterator[dict[str, dict[str, Any]]]:
        """``payloads`` in steps of PAYLOAD_CHUNK points (``_steps``)."""
        return map(dict, self._steps(list(payloads.items()), PAYLOAD_CHUNK))

    def _steps(self, items: list, size: int) -> Iterator[list]:
        """``items`` in slices of ``size``, giving way to foreground requests before each
        (pipeline.foreground): background work's calls into the binding, cut short."""
        for start in range(0, len(items), size):
            self._give_way()
            yield items[start:start + size]

    def _write_payloads(self, operation, payloads: dict[str, dict[str, Any]]) -> None:
        """One payload operation per point (call holding ``_writes`` and ``_access`` shared)."""
        # Edge applies one operation per call; in-process, so a loop costs microseconds each.
        for memory_id, payload in payloads.items():
            self._shard.update(operation([point_id_for(memory_id)], self._pack(payload)))
        self._journaled([point_id_for(m) for m in payloads])
        self._unflushed += len(payloads)
        # A payload update moves an indexed point out of its HNSW segment, as an upsert
        # does (Qdrant copies on write): it counts toward the next build like one. It does not
        # hold a build back (_last_change), as enrichment's background updates are not a bulk
        # import that a build would stall.
        self._changes += len(payloads)

    def count_memories(self, excluded_types: frozenset[str] = frozenset()) -> int:
        """Points whose type is not excluded. /health asks on every call, so it is the shard's
        point count (kept in its segments' info) less the excluded types' count from the
        ``type`` index; a ``must_not`` count checks every point's payload, holding the GIL for
        tens of milliseconds at 100k."""
        qe = self._qe
        with self._access.shared():
            total = int(self._shard.info().points_count)
            if not excluded_types or not total:
                return total
            flt = qe.Filter(must=[qe.FieldCondition(key="type", match=qe.MatchAny(sorted(excluded_types)))])
            return total - int(self._shard.count(qe.CountRequest(exact=True, filter=flt)))

    def ping(self) -> bool:
        with self._access.shared():  # not "down" for the instant a swap has no shard open
            return self._shard is not None

    def stays_plain(self) -> bool:
        """Is the shard small enough to go without an HNSW graph (``plain_max_points``)? It may
        still get codes-only builds."""
        if not self._plain_max_points or self._conversion_due:
            return False
        return int(self._read(lambda: self._shard.info()).points_count) <= self._plain_max_points  # info(): microseconds

    def indexed_points(self) -> int:
        """Points in built segments, graph or codes-only (0 on a shard that was never built)."""
        return int(self._read(lambda: self._shard.info()).indexed_vectors_count)

    def build_due(self) -> bool:
        """Would ``maintain`` build the index now (writes quiet, and a build wanted: ``_wanted_build``)?"""
        return self._due_build() is not None

    def due_build_is_codes_only(self) -> bool:
        """Would the build due now write codes only (the shard under its plain size)? Such a
        build can wait out an import: until it, a search scans at most the plain size."""
        layout = self._due_build()
        return layout is not None and not layout.graph

    def _due_build(self) -> edge_swap.ShardLayout | None:
        """The layout of the build ``maintain`` would start now: writes quiet, and one wanted."""
        if time.monotonic() - self._last_change < self._optimize_quiet_s:
            return None
        return self._wanted_build()

    def _wanted_build(self) -> edge_swap.ShardLayout | None:
        """The layout of the build the changes call for (writes' quiet and retries aside): past
        the plain size a graph build once enough changed (or when the last was codes-only),
        below it a codes-only build once ``codes_build_min_changes`` changed; else None."""
        if self.stays_plain():
            return self._layout.codes_only() if self._codes_build_called_for() else None
        return self._layout if self._codes_only or self._enough_changes() else None

    def _codes_build_called_for(self) -> bool:
        """Under the plain size: have enough points changed for a codes-only build?"""
        return self._codes_builds and self._changes >= self._codes_build_min_changes

    def _enough_changes(self) -> bool:
        """Enough changed since the last build for another: OPTIMIZE_MIN_CHANGES, and the
        minimum share of the shard's points (a payload-placement conversion: any)."""
        if self._changes < self._optimize_min_changes:
            return False
        if self._conversion_due or not self._optimize_min_share:
            return True
        return self._changes >= self._optimize_min_share * int(self._read(lambda: self._shard.info()).points_count)

    def pending_changes(self) -> int:
        """Points written, deleted or given a new payload since the last index build (what the
        next one indexes)."""
        return self._changes

    def build_pending(self) -> int:
        """The points an index build in a child, or one still to come, will index. While a child
        builds, the live shard stays as unindexed as it was until the swap. 0 while the shard
        stays plain and no codes-only build is called for (its changes stay counted for the
        next build)."""
        if self._build is not None:
            return self._unindexed_changes()
        if not self._changes or (self.stays_plain() and not self._codes_build_called_for()):
            return 0
        return self._changes

    def persist(self) -> int:
        """Flush the shard if it was written since the last flush; returns the writes flushed.

        A flush writes the segments' changes to disk and truncates the write-ahead log, so the
        next open loads segments instead of replaying writes. It holds the GIL like every call
        into the binding, for a time that grows with what changed since the last one.
        """
        if self._unflushed and self._shard is not None:
            self._give_way()
        # A flush writes the shard's files: never while a build's copy is taken (_writes).
        with self._writes.shared(), self._access.shared():
            written, self._unflushed = self._unflushed, 0
            if written and self._shard is not None:
                self._shard.flush()
                self._save_changes()
        return written

    def warm_page_cache(self, stop: Callable[[], bool] = lambda: False) -> int:
        """Read the shard's files into the page cache (returns the bytes read). The close at the
        last stop dropped them from it, so after a start the first searches would read their
        codes from disk a page at a time, holding the GIL; the index maintainer calls this once,
        off the request path, as the web starts (edge_swap.warm_page_cache)."""
        return edge_swap.warm_page_cache(shard_generations.live_dir(self._path),
                                         stop=lambda: stop() or self._closing.is_set())

    def build_in_flight(self) -> bool:
        """Is a child process building a copy of the shard (``maintain`` swaps it in once done)?"""
        return self._build is not None

    def maintain(self) -> None:
        """Build the index when enough has changed (``_wanted_build``: the HNSW graph past the
        plain size, codes only below it): in a child process on a copy (``child_build``),
        swapped in by a later call once the child is done, or here (graph builds only).
        Blocks (briefly with a child): call it off the request path."""
        if self._build is not None:
            if self._optimize_lock.acquire(blocking=False):
                try:
                    self._advance_build()
                finally:
                    self._optimize_lock.release()
            return
        if not self._text_ready and self._text_backfill and self._optimize_lock.acquire(blocking=False):
            try:  # an older shard's one-off migration (pipeline.vectors.edge_text)
                self.backfill_text()
            finally:
                self._optimize_lock.release()
        # optimize() holds the shard for seconds (tens at bulk sizes): during a bulk import it
        # would stall every upsert behind it, so wait until writes have paused.
        if time.monotonic() - self._last_change < self._optimize_quiet_s:
            return
        layout = self._wanted_build()
        if layout is None:
            return  # the changes stay counted for the next build
        if self._child_build is not None and time.monotonic() < self._build_retry_at:
            return  # the last build failed: not again before its retry time
        if not self._optimize_lock.acquire(blocking=False):
            return
        try:
            if self._child_build is not None:
                self._start_build(layout)
                return
            changes, self._changes = self._changes, 0
            started = time.monotonic()
            log.info(INDEX_BUILD_STARTED, extra={"changes": changes})
            with self._access.shared():
                self._shard.optimize()
                self._shard.flush()
            self._unflushed = 0
            self._conversion_due = False
            self._codes_only = False  # this process builds with the web's layout, the graph's
            self._save_changes()  # the record read at the next open: a kill before the next flush owes no build
            log.info(INDEX_BUILD_FINISHED, extra={"changes": changes, "seconds": round(time.monotonic() - started, 2)})
        finally:
            self._optimize_lock.release()

    def finish_build(self, poll_s: float = 0.2) -> None:
        """Block until a build in a child process is swapped in (or has failed): for offline
        tools (a restore, a benchmark) that want the index built before they go on."""
        while self._build is not None:
            time.sleep(poll_s)
            self.maintain()

    def _start_build(self, layout: edge_swap.ShardLayout) -> None:
        """Copy the shard for a child to build with ``layout``, journal writes from now on, start the child."""
        changes, self._changes = self._changes, 0
        started = time.monotonic()
        build_path = edge_swap.sibling(self._path, edge_swap.BUILD)
        try:
            with self._writes.exclusive():  # vector writes and flushes wait; searches go on
                with self._access.shared():
                    self._shard.flush()
                self._unflushed = 0
                edge_swap.copy_shard(shard_generations.live_dir(self._path), build_path)
                self._journal = set()
            paused = time.monotonic() - started
            self._build = ChildBuild(self._path, layout, self._child_build)
        except BaseException:
            shutil.rmtree(build_path, ignore_errors=True)
            self._build_failed(changes)
            raise
        self._build_changes = changes
        log.info(INDEX_BUILD_STARTED, extra={"changes": changes, "child_pid": self._build.pid,
                                             "graph": layout.graph, "copy_seconds": round(paused, 3)})

    def _build_failed(self, changes: int) -> None:
        """The live shard stays as it is; its changes wait for the next try, after the retry time."""
        self._journal = None
        self._build = None
        self._changes += changes
        self._build_retry_at = time.monotonic() + self._child_build.retry_s

    def _take_journal(self) -> set:
        with self._writes.exclusive():  # no write between its shard update and its journal entry
            ids, self._journal = self._journal, set()
        return ids

    def _advance_build(self) -> None:
        """Swap in the child's build once it has exited 0; after a failure drop it."""
        build = self._build
        status = build.poll()
        if status is None:
            return
        changes = self._build_changes
        if status != 0:
            build.discard()
            self._build_failed(changes)
            log.warning(INDEX_BUILD_FAILED, extra={"exit_status": status, "retry_s": self._child_build.retry_s,
                                                   "seconds": round(time.monotonic() - build.started, 1)})
            return
        try:
            caught_up, pause, warmed, steps = self._swap_in(build)
        except BaseException:
            build.discard()
            self._build_failed(changes)
            raise
        self._build = None
        self._conversion_due = False
        self._codes_only = not build.layout.graph
        self._save_changes()  # as after a build in this process
        log.info(INDEX_BUILD_FINISHED, extra={"changes": changes, "graph": build.layout.graph,
                                              "seconds": round(time.monotonic() - build.started, 2),
                                              "caught_up": caught_up, "warm_seconds": round(warmed, 3),
                                              "swap_pause_seconds": round(pause, 3), "swap_steps_ms": steps})

    def _swap_in(self, build: ChildBuild) -> tuple[int, float, float, dict[str, float]]:
        """Bring the built copy up to date and make it the live shard; returns (points caught up,
        seconds searches waited, seconds reading the copy into the page cache, the swap's
        milliseconds by step). A failure leaves the old shard live, as it was.

        The copy becomes the next generation and is opened beside the live shard, which goes on
        answering (pipeline.vectors.shard_generations). Writes wait only for the last few
        journaled points and the link's replacement; searches only for the switch of one
        reference. Each call into either shard still holds the GIL while it runs, the open and
        the old shard's close included: between calls the process's requests get their turn.
        """
        qe = self._qe
        steps = edge_swap.StepTimer()  # where the swap goes, for the log
        target = shard_generations.next_dir(self._path)
        os.rename(build.build_path, target)  # closed since the child exited: free to move
        # The child's close dropped the copy's files from the page cache: read back first, its
        # open and its first searches read memory, not the disk.
        edge_swap.warm_page_cache(target, stop=self._closing.is_set)
        warmed = steps.mark("warm_page_cache")
        caught_up = 0
        try:
            self._give_way()
            built = qe.EdgeShard.load(target, self._layout.config(qe))
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
        steps.mark("open_built")
        try:
            # Many points written during the build: copied while the web goes on answering and
            # writing (each step gives way), in rounds, each copying what the one before saw written.
            for _ in range(edge_swap.CATCH_UP_ROUNDS):
                if len(self._journal) <= edge_swap.CATCH_UP_PAUSED_MAX:
                    break
                caught_up += edge_swap.copy_points(self._shard, built, qe, self._take_journal(), self._give_way,
                                                   self._read)
            # the flushes this thread would have made meanwhile: the old shard's own flush, after
            # the switch, is then left the writes of the last moments only (each holds the GIL)
            self.persist()
            steps.mark("catch_up")
            with self._writes.exclusive():  # writes wait from here; searches go on, on the live shard
                rest, self._journal = list(self._journal), None
                caught_up += edge_swap.copy_points(self._shard, built, qe, rest, self._give_way, self._read)
                retired = shard_generations.live_dir(self._path)
                shard_generations.point_to(self._path, target)  # from here a start opens the built shard
                steps.mark("writes_paused")
                with self._access.exclusive():  # the searches in flight end on the old shard
                    old, self._shard = self._shard, built
                self._unflushed = caught_up  # in the new shard's write-ahead log; the next persist() flushes
                paused = steps.mark("searches_paused")
        except BaseException:
            built.close()
            shutil.rmtree(target, ignore_errors=True)
            raise
        try:
            edge_swap.retire_shard(old, qe, INDEXED_FIELDS, self._give_way, steps)
        except Exception:  # the new shard is live whatever happens to the old one
            log.warning(OLD_SHARD_CLOSE_FAILED, exc_info=True)
        shutil.rmtree(retired, ignore_errors=True)  # after the close: a large shard takes a while
        return caught_up, paused, warmed, steps.milliseconds

    def close(self) -> None:
        self._closing.set()  # a swap's page-cache read stops at once, so the swap and this end sooner
        with self._optimize_lock:  # not in the middle of a swap
            self._stop_build()
            if self._shard is not None:
                self._shard.flush()
                self._save_changes()
                self._shard.close()
                self._shard = None
                shard_lock.release(self._path)

    def _stop_build(self) -> None:
        """A stop during a build ends the child and removes its copy; the live shard has everything."""
        if self._build is not None:
            self._build.stop()
            self._build = None
            self._journal = None
            self._changes += self._build_changes

    def drop(self) -> None:
        with self._optimize_lock:
            self._stop_build()
            if self._shard is not None:
                self._shard.close()
                self._shard = None
                shard_lock.release(self._path)
            shard_generations.remove(self._path)
