"""Vector stage: writes to Qdrant (Edge or server), and the end of a write's journey.

In the embedded default the web process owns the Edge shard and is the only consumer of
this queue; with a Qdrant server any worker may consume it.
"""

from __future__ import annotations

from typing import Any

import dramatiq

from pipeline.actors.context import services
from pipeline.broker import VECTORS_QUEUE
from pipeline.packing import vector_of
from pipeline.resilience import store_call
from pipeline.tracking import DELETED, RECALLABLE, UPDATED
from pipeline.vectors import VectorPoint


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
