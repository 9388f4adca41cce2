"""SIMILAR_TO: link a newly indexed memory to its nearest neighbours in the vector index.

This actor needs a vector search, and with Qdrant Edge only the process that owns the shard
can search it. So it has its own queue, ``similarity``, consumed beside ``vectors`` by the
vector owner (the web process, on a thread of its own, in the embedded default; any worker
with a Qdrant server). The message carries the vector that was just indexed, so nothing is
re-embedded or read back. Edges are symmetric and merged, strength = cosine similarity.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any, Callable, Sequence

import dramatiq

from pipeline.actors.context import services
from pipeline.broker import SIMILARITY_QUEUE, write_path_busy
from pipeline.edges import Link, merge_links
from pipeline.relations import BY_NAME
from pipeline.packing import vector_of
from pipeline.resilience import store_call
from pipeline.vectors import VectorQuery, VectorStore


def nearest_links(vectors: VectorStore, items: list[tuple[str, Sequence[float]]], threshold: float, limit: int) -> list[Link]:
    """SIMILAR_TO links of each (memory id, vector), from one batched search."""
    # Only ids and scores are needed: not converting each hit's payload saves most of a search.
    results = vectors.search_many([VectorQuery(vector, limit + 1, with_payload=False) for _, vector in items])
    links: list[Link] = []
    for (memory_id, _), hits in zip(items, results):
        links += [Link(memory_id, hit.memory_id, round(hit.score, 6))
                  for hit in hits if hit.memory_id != memory_id and hit.score >= threshold][:limit]
    return links


def yield_to_writes(backlog: Callable[[], int], bound: int, max_wait_s: float, sleep: Callable[[float], None] = time.sleep,
                    arriving: Callable[[], bool] = lambda: False) -> float:
    """Wait while more than ``bound`` writes are not yet recallable, or while writes are still
    arriving; returns the seconds waited.

    SIMILAR_TO costs a vector search per memory (~1.2 ms of CPU against a built 12k-point
    Edge index here, ~2 ms brute force while the HNSW build waits for writes to pause): more
    than indexing itself, on the process that owns the shard and cannot be scaled out. So
    making memories recallable comes first; linking follows in the gaps of the write stream,
    and after a bulk import against the built index. The backlog bound covers a bulk import;
    ``arriving`` (writes queued in the last moment) covers a stream of single writes, whose
    backlog stays small (``link_similar`` also counts a large Edge index build that is due as
    a reason to wait). A write stuck in the backlog (dead-lettered) holds nothing up for
    long: the wait ends when writes stop arriving. The message stays unacknowledged while it
    waits, so a crash redelivers it.
    """
    waited, step = 0.0, 0.25
    while waited < max_wait_s and ((bound > 0 and backlog() > bound) or arriving()):
        sleep(step)
        waited += step
    return waited


def _write_path_active(svc) -> Callable[[], bool]:
    """Writes still on their way: queued within the quiet window, or held by a write-path
    queue. The second covers the end of a bulk import: once the importer stops, the arrival
    key expires within 250 ms and the backlog falls under the bound while the last batches
    are still being persisted, embedded and indexed; links made then took CPU from them (on
    the web process, which owns the vectors and was the bound), not from an idle machine."""
    def active() -> bool:
        return svc.tracker.writes_arriving() or write_path_busy(svc.broker_redis)
    return active


def _large_index_build_due(svc) -> Callable[[], bool]:
    """Does the shard hold more unindexed points than a build waits for the catch-up for?

    Then the build goes first (api.index_maintainer) and linking waits for it: before
    it, every search scans every unindexed point (after a 100k import, 1.55 s for one message
    of 500 searches; 0.4 s once built). Always False with a Qdrant server, which indexes
    as it goes.
    """
    bound = svc.settings.edge_optimize_similarity_wait_max_changes
    return lambda: getattr(svc.vectors, "pending_changes", lambda: 0)() > bound


@dramatiq.actor(queue_name=SIMILARITY_QUEUE)
def link_similar(items: list[dict[str, Any]]) -> None:
    svc = services()
    s = svc.settings
    if s.similar_to_limit <= 0:
        return
    # SIMILAR_TO_DEFER_QUIET_MS=0 turns the arrival condition off, the queue condition with it.
    writes_active = _write_path_active(svc) if s.similar_to_defer_quiet_ms > 0 else (lambda: False)
    build_due = _large_index_build_due(svc)
    yield_to_writes(svc.tracker.inflight_count, s.similar_to_defer_backlog, s.similar_to_defer_max_s,
                    arriving=lambda: writes_active() or build_due())
    skipped = svc.tracker.tombstoned([item["id"] for item in items])
    wanted = [(item["id"], vector_of(item, f32=True)) for item in items if item["id"] not in skipped]
    links = store_call(nearest_links)(svc.vectors, wanted, s.similar_to_threshold, s.similar_to_limit) if wanted else []
    store_call(merge_links)(svc.graph, BY_NAME["SIMILAR_TO"], links, datetime.now(timezone.utc).isoformat())
