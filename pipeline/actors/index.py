"""Vector stage: writes to Qdrant (Edge or server), and the end of a write's journey.

In the embedded default the web process owns the Edge shard and is the only consumer of
this queue; with a Qdrant server any worker may consume it.
"""

from __future__ import annotations

from typing import Any

import dramatiq

from pipeline.actors.context import services
from pipeline.broker import VECTORS_QUEUE
from pipeline.packing import pack_vector, vector_of
from pipeline.resilience import store_call
from pipeline.tracking import DELETED, RECALLABLE, UPDATED
from pipeline.vectors import VectorPoint, vector_payload


@dramatiq.actor(queue_name=VECTORS_QUEUE)
def index_vectors(items: list[dict[str, Any]]) -> None:
    svc = services()
    skipped = svc.tracker.tombstoned([item["id"] for item in items])
    items = [item for item in items if item["id"] not in skipped]
    if not items:
        return
    store_call(svc.vectors.upsert)([VectorPoint(i["id"], vector_of(i), i["payload"]) for i in items])
    for op in {item["op"] for item in items}:
        ids = [item["id"] for item in items if item["op"] == op]
        svc.tracker.finish(ids, op, RECALLABLE if op == "store" else UPDATED)
    _start_enrichment(svc, items)


def _start_enrichment(svc, items: list[dict[str, Any]]) -> None:
    """New text is recallable now; enrichment follows, off the write path.

    It starts here rather than after persist so that its payload refresh can never be
    overtaken by this upsert of the payload computed before enrichment.
    """
    if not svc.settings.enrichment_enabled:
        return
    from pipeline.actors.enrich import queue_enrichment
    from pipeline.actors.similarity import link_similar

    queue_enrichment(svc, [item["id"] for item in items])
    if svc.settings.similar_to_limit > 0:
        # The vector travels packed, as between the other stages; nothing is re-embedded, and
        # a vector that arrived packed is passed on as it came (no decode and re-encode).
        link_similar.send([{"id": item["id"], "vector_f32": item.get("vector_f32") or pack_vector(item["vector"])} for item in items])


@dramatiq.actor(queue_name=VECTORS_QUEUE)
def refresh_vector_payloads(memory_ids: list[str]) -> None:
    """Copy enrichment results (tags, type, summary, duplicate_of) from the graph to the points."""
    svc = services()
    skipped = svc.tracker.tombstoned(memory_ids)
    memories = store_call(svc.graph.get_memories)([m for m in memory_ids if m not in skipped])
    for memory_id, memory in memories.items():
        store_call(svc.vectors.set_payload)(memory_id, vector_payload(memory))


@dramatiq.actor(queue_name=VECTORS_QUEUE)
def update_vector_payload(memory_id: str, payload: dict[str, Any]) -> None:
    svc = services()
    store_call(svc.vectors.set_payload)(memory_id, payload)
    svc.tracker.finish([memory_id], "update", UPDATED)


@dramatiq.actor(queue_name=VECTORS_QUEUE)
def drop_vectors(memory_ids: list[str]) -> None:
    svc = services()
    store_call(svc.vectors.delete)(memory_ids)
    svc.tracker.finish(memory_ids, "delete", DELETED)
