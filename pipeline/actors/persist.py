"""Persist stage: the graph write that makes a memory part of the record.

Messages carry batches of whole records, so a redelivered message writes the same thing
again (``MERGE`` by id) and one message costs one ``UNWIND`` round trip. When small messages
queue up (single writes), one call takes several of them (``pipeline.drain``).
"""

from __future__ import annotations

from typing import Any

from pipeline.actor_context import services
from pipeline.classify import classify
from pipeline.records import MemoryRecord, point_id_for
from pipeline.resilience import store_call
from pipeline.services import Services
from pipeline.stages import (EmbedItem, RecordMessage, VectorItem, draining_actor, send_drop_vectors, send_embed,
                             send_update_payload, send_vectors, stage_actor)
from pipeline.tracking import PERSISTED
from pipeline.vectors import edge_packed_payload, vector_payload


def _with_type(record: MemoryRecord) -> MemoryRecord:
    if record.type is None:
        result = classify(record.content)
        record.type, record.type_source = result.type, "pattern"
        if record.confidence is None:
            record.confidence = result.confidence
    return record


def vector_work_item(memory: dict[str, Any], op: str, *, edge: bool = False) -> EmbedItem:
    """What the embed and vector stages need for one memory, nothing more.

    With ``edge`` (Qdrant Edge, owned by the web process) the payload travels already in the
    shard's layout (``edge_payload``) with its point id: packing it and hashing the id here,
    on a worker, spares the web (the one process that cannot scale out) decoding the nested
    payload, packing it and deriving the id for every memory.
    """
    if edge:
        return {"id": memory["id"], "op": op, "text": memory["content"], "point_id": point_id_for(memory["id"]),
                "edge_payload": edge_packed_payload(vector_payload(memory))}
    return {"id": memory["id"], "op": op, "text": memory["content"], "payload": vector_payload(memory)}


@draining_actor("persist_memories", lambda svc: svc.settings.persist_drain_max_items)
def persist_memories(svc: Services, records: list[RecordMessage]) -> None:
    """Write a batch of whole records to the graph, then hand them to the embed or vector stage."""
    skipped = svc.tracker.tombstoned([r["id"] for r in records])
    batch = [_with_type(MemoryRecord.from_message(r)) for r in records if r["id"] not in skipped]
    if not batch:
        return
    store_call(svc.graph.upsert_memories)(batch)
    store_call(svc.graph.link_threads)(batch)
    svc.tracker.advance([r.id for r in batch], PERSISTED)

    to_embed: list[EmbedItem] = []
    embedded: list[VectorItem] = []
    edge = svc.settings.uses_qdrant_edge
    for record in batch:
        item = vector_work_item(record.to_message(), "store", edge=edge)
        if record.embedding is None:
            to_embed.append(item)
        else:
            embedded.append({**item, "vector": record.embedding})
    if to_embed:
        send_embed(to_embed, svc.settings.embed_batch_size, by_length=svc.settings.embed_group_by_length)
    if embedded:
        send_vectors(embedded)


@stage_actor("update_memory")
def update_memory(memory_id: str, changes: dict[str, Any]) -> None:
    svc = services()
    if svc.tracker.tombstoned([memory_id]):
        return
    current = None
    if "tags" in changes:
        # Entity tags belong to enrichment: a client replacing the tags keeps them (the next
        # enrichment pass recomputes them from the content anyway).
        current = store_call(svc.graph.get_memory)(memory_id)
        entity_tags = [t for t in (current or {}).get("entity_tags") or [] if t not in changes["tags"]]
        changes = {**changes, "tags": changes["tags"] + entity_tags}
    if "content" in changes and changes.get("type_source") is None and "type" not in changes:
        current = current or store_call(svc.graph.get_memory)(memory_id)
        if current and current.get("type_source") in ("pattern", "llm"):
            result = classify(changes["content"])
            changes = {**changes, "type": result.type, "type_source": "pattern", "confidence": result.confidence}
    vector = changes.pop("embedding", None)
    if not store_call(svc.graph.update_memory)(memory_id, changes):
        svc.tracker.finish([memory_id], "update", "missing")
        return
    memory = store_call(svc.graph.get_memory)(memory_id)
    item = vector_work_item(memory, "update")
    if vector is not None:
        send_vectors([{**item, "vector": vector}])
    elif "content" in changes:
        send_embed([item], svc.settings.embed_batch_size, by_length=svc.settings.embed_group_by_length)
    else:
        send_update_payload(memory_id, item["payload"])


@stage_actor("delete_memories")
def delete_memories(memory_ids: list[str]) -> None:
    svc = services()
    store_call(svc.graph.delete_memories)(memory_ids)
    send_drop_vectors(memory_ids)
