"""Embed stage: many texts per provider call — the expensive part of the pipeline.

Each item is embedded once per collection that takes writes: the live one and, during a
dimension migration, its target (with that collection's own embedding). An item may name
the only collections it is for (a migration's copy names the target).

Single writes arrive a few per message; queued ones behind a message fill its provider call
(``draining_actor``), and the vector stage then gets one message for all of them.
"""

from __future__ import annotations

from pipeline.labelled import embed_contents_f32
from pipeline.packing import pack_vector
from pipeline.services import Services
from pipeline.stages import MIGRATE_OP, EmbedItem, VectorItem, draining_actor, send_vectors, without_deleted
from pipeline.tracking import EMBEDDED


@draining_actor("embed_memories", lambda svc: svc.settings.embed_drain_max_items)
def embed_memories(svc: Services, items: list[EmbedItem]) -> None:
    """Embed the items for every writable collection and hand them to the vector stage."""
    embedded: list[VectorItem] = without_deleted(svc, items)
    if not embedded:
        return
    state = svc.collections.state()
    size, labelled = svc.settings.embed_batch_size, svc.settings.embed_labelled_sentences
    for spec in state.writable:
        wanted = [item for item in embedded if spec.name in item.get("collections", (spec.name,))]
        embedder = svc.embedder_for(spec)
        for start in range(0, len(wanted), size):
            chunk = wanted[start : start + size]
            # float32 rows from the provider straight to base64 (no list of Python floats between)
            matrix = embed_contents_f32(embedder, [item["text"] for item in chunk], labelled=labelled)
            for item, row in zip(chunk, matrix):
                item.setdefault("vectors_f32", {})[spec.name] = pack_vector(row)
    svc.tracker.advance([item["id"] for item in embedded if item.get("op") != MIGRATE_OP], EMBEDDED)
    for item in embedded:
        item.pop("text", None)  # embedded: the vector stage reads the payload (content included), not this copy
    send_vectors(embedded)
