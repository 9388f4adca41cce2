"""Embed stage: many texts per provider call — the expensive part of the pipeline.

Each item is embedded once per collection that takes writes: the live one and, during a
dimension migration, its target (with that collection's own embedding). An item may name
the only collections it is for (a migration's copy names the target).
"""

from __future__ import annotations

from typing import Any

import dramatiq

from pipeline.actors.context import services
from pipeline.broker import EMBED_QUEUE
from pipeline.drain import drain_bound, draining
from pipeline.labelled import embed_contents_f32
from pipeline.maintenance.migrate import settle_outstanding
from pipeline.packing import pack_vector
from pipeline.tracking import EMBEDDED


def message_chunks(items: list[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    """``items`` cut into messages of at most ``size`` (EMBED_BATCH_SIZE: one provider call each).

    A batch of hundreds embedded in one message holds a worker thread for minutes with the
    local model: a stopping worker cannot finish it in time, and all of it is redone after
    a kill. One provider call per message keeps every message short; queued ones are drained
    back into full calls when the provider keeps up (``EMBED_DRAIN_MAX_ITEMS``).
    """
    return [items[start : start + size] for start in range(0, len(items), size)]


def send_embed_work(items: list[dict[str, Any]], size: int) -> None:
    for chunk in message_chunks(items, size):
        embed_memories.send(chunk)


@dramatiq.actor(queue_name=EMBED_QUEUE)
def embed_memories(items: list[dict[str, Any]]) -> None:
    svc = services()
    # Single writes arrive a few per message; queued ones behind this one fill its provider
    # call, and the vector stage then gets one message for all of them (pipeline.drain).
    bound = drain_bound(svc.settings.embed_drain_max_items)
    with draining(dramatiq.get_broker(), EMBED_QUEUE, "embed_memories", items, bound) as batch:
        _embed(svc, batch)


def _embed(svc, items: list[dict[str, Any]]) -> None:
    from pipeline.actors.vectors import index_vectors

    skipped = svc.tracker.tombstoned([item["id"] for item in items])
    settle_outstanding(svc.broker_redis, [i for i in items if i["id"] in skipped])
    items = [item for item in items if item["id"] not in skipped]
    if not items:
        return
    state = svc.collections.state()
    size, labelled = svc.settings.embed_batch_size, svc.settings.embed_labelled_sentences
    for spec in state.writable:
        wanted = [item for item in items if spec.name in item.get("collections", (spec.name,))]
        embedder = svc.embedder_for(spec)
        for start in range(0, len(wanted), size):
            chunk = wanted[start : start + size]
            # float32 rows from the provider straight to base64 (no list of Python floats between)
            matrix = embed_contents_f32(embedder, [item["text"] for item in chunk], labelled=labelled)
            for item, row in zip(chunk, matrix):
                item.setdefault("vectors_f32", {})[spec.name] = pack_vector(row)
    svc.tracker.advance([item["id"] for item in items if item.get("op") != "migrate"], EMBEDDED)
    for item in items:
        item.pop("text", None)  # embedded: the vector stage reads the payload (content included), not this copy
    index_vectors.send(items)
