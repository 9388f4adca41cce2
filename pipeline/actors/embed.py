"""Embed stage: many texts per provider call — the expensive part of the pipeline."""

from __future__ import annotations

from typing import Any

import dramatiq

from pipeline.actors.context import services
from pipeline.broker import EMBED_QUEUE
from pipeline.packing import pack_vector
from pipeline.tracking import EMBEDDED


@dramatiq.actor(queue_name=EMBED_QUEUE)
def embed_memories(items: list[dict[str, Any]]) -> None:
    from pipeline.actors.index import index_vectors

    svc = services()
    skipped = svc.tracker.tombstoned([item["id"] for item in items])
    items = [item for item in items if item["id"] not in skipped]
    if not items:
        return
    size = svc.settings.embed_batch_size
    vectors: list[list[float]] = []
    for start in range(0, len(items), size):
        vectors += svc.embedder.embed([item["text"] for item in items[start : start + size]])
    svc.tracker.advance([item["id"] for item in items], EMBEDDED)
    index_vectors.send([{**item, "vector_f32": pack_vector(vector)} for item, vector in zip(items, vectors)])
