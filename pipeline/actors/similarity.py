"""SIMILAR_TO: link a newly indexed memory to its nearest neighbours in the vector index.

This actor needs a vector search, and with Qdrant Edge only the process that owns the shard
can search it. So it has its own queue, ``similarity``, consumed beside ``vectors`` by the
vector owner (the web process, on a thread of its own, in the embedded default; any worker
with a Qdrant server). The message carries the vector that was just indexed, so nothing is
re-embedded or read back. Edges are symmetric and merged, strength = cosine similarity.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable, Sequence

from pipeline.actor_context import services
from pipeline.background import wait_for_quiet_writes
from pipeline.relationships import Link, merge_links
from pipeline.relations import BY_NAME
from pipeline.packing import vector_of
from pipeline.resilience import store_call
from pipeline.stages import SimilarItem, stage_actor
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


def _large_index_build_due(svc) -> Callable[[], bool]:
    """Will a coming index build, or the one a child is running, index more points than a
    build waits for the catch-up for?

    Then the build goes first (api.index_maintainer) and linking waits for it: until its
    swap, every search scans every unindexed point, holding the web's GIL (at a million,
    the build's catch-up of the points written meanwhile crawled behind those scans). A
    shard under its plain size (``EDGE_PLAIN_MAX_POINTS``) gets only codes-only builds, once
    enough changed, and a Qdrant server indexes as it goes: no wait otherwise, or every
    message would sit out its longest wait for a build that does not come.
    """
    bound = svc.settings.edge_optimize_similarity_wait_max_changes
    build_pending = getattr(svc.vectors, "build_pending", lambda: 0)
    return lambda: build_pending() > bound


@stage_actor("link_similar")
def link_similar(items: list[SimilarItem]) -> None:
    svc = services()
    s = svc.settings
    if s.similar_to_limit <= 0:
        return
    # SIMILAR_TO searches cost more than indexing, on the process that owns the shard: the
    # write path goes first (pipeline.background), and so does a large index build that is due.
    wait_for_quiet_writes(svc, also_wait=_large_index_build_due(svc))
    skipped = svc.tracker.tombstoned([item["id"] for item in items])
    wanted = [(item["id"], vector_of(item, f32=True)) for item in items if item["id"] not in skipped]
    links = store_call(nearest_links)(svc.vectors, wanted, s.similar_to_threshold, s.similar_to_limit) if wanted else []
    store_call(merge_links)(svc.graph, BY_NAME["SIMILAR_TO"], links, datetime.now(timezone.utc).isoformat())
