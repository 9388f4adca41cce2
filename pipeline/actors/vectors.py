"""Vector stage: writes to Qdrant (Edge or server), and the end of a write's journey.

In the embedded default the web process owns the Edge shard and is the only consumer of
this queue; with a Qdrant server any worker may consume it.

An item's vectors are keyed by collection (``vectors_f32``: the embed stage embeds for every
collection taking writes); an item with one plain vector (a client's embedding, a cluster
centre) is for the live collection. Each collection gets the vectors of its own size only, so
no collection ever holds a mixture.
"""

from __future__ import annotations

from typing import Any, Sequence

from pipeline.actor_context import services
from pipeline.packing import pack_vector, unpack_vector_f32, vector_of
from pipeline.resilience import store_call
from pipeline.services import Services
from pipeline.stages import (MIGRATE_OP, SimilarItem, VectorItem, draining_actor, send_enrich, send_similar,
                             settle_copies, stage_actor, without_deleted)
from pipeline.tracking import DELETED, RECALLABLE, UPDATED
from pipeline.vectors import VectorPoint, payload_changed, vector_payload
from pipeline.vectors.edge_payload import PackedPayload
from pipeline.vectors.registry import CollectionSpec, CollectionState


def vector_for(item: VectorItem, spec: CollectionSpec, state: CollectionState) -> Sequence[float] | None:
    """The item's vector for ``spec``: a packed one as ``array('f')`` (Edge reads its buffer)."""
    keyed = item.get("vectors_f32")
    if keyed is not None:
        packed = keyed.get(spec.name)
        vector = unpack_vector_f32(packed) if packed is not None else None
    else:
        vector = vector_of(item) if spec.name == state.live.name else None
    return vector if vector is not None and len(vector) == spec.dims else None


# With Qdrant Edge this runs in the web process, which also answers every request: when its
# vector messages queue up (single writes, a few memories each), one call takes the run behind
# it, and the upsert, the bookkeeping and the enrichment hand-off are paid once.
@draining_actor("index_vectors", lambda svc: svc.settings.vector_drain_max_items)
def index_vectors(svc: Services, items: list[VectorItem]) -> None:
    """Upsert the items' points into every writable collection; the write is recallable after this."""
    items = without_deleted(svc, items)
    if not items:
        return
    copies = [item for item in items if item.get("op") == MIGRATE_OP]
    current: dict[str, Any] = {}
    if copies:
        # A migration's copy takes the payload as the graph has it now: an update that landed
        # while the copy was queued is not lost (the point did not exist for its fan-out).
        current = store_call(svc.graph.get_memories)([item["id"] for item in copies])
        for item in copies:
            if item["id"] in current:
                item["payload"] = vector_payload(current[item["id"]])
                item.pop("edge_payload", None)
    state = svc.collections.state(fresh=True)
    for spec in state.writable:
        points = [VectorPoint(i["id"], v, _payload(i), i.get("point_id")) for i in items
                  if (v := vector_for(i, spec, state)) is not None and (i.get("op") != MIGRATE_OP or i["id"] in current)]
        if points:
            store_call(svc.vector_store(spec).upsert)(points)
    settle_copies(svc.broker_redis, copies)
    writes = [item for item in items if item.get("op") != MIGRATE_OP]
    for op in {item["op"] for item in writes}:
        ids = [item["id"] for item in writes if item["op"] == op]
        svc.tracker.finish(ids, op, RECALLABLE if op == "store" else UPDATED)
    _start_enrichment(svc, [linkable for item in writes if (linkable := _live_vector(item, state)) is not None])


def _payload(item: VectorItem) -> dict[str, Any]:
    """The item's payload: packed for Edge by the persist stage, or plain (every other sender)."""
    packed = item.get("edge_payload")
    return PackedPayload(packed) if packed is not None else item["payload"]


def _live_vector(item: VectorItem, state: CollectionState) -> SimilarItem | None:
    """What SIMILAR_TO needs of an indexed item: its id and its live vector, packed.

    A vector the embed stage packed is passed on as it came: decoding 384 floats to a list
    and packing them again per memory would be a measurable share of the vector owner's CPU.
    """
    packed = (item.get("vectors_f32") or {}).get(state.live.name)
    if packed is not None:
        return {"id": item["id"], "vector_f32": packed} if len(packed) == _packed_length(state.live.dims) else None
    vector = vector_for(item, state.live, state)
    return {"id": item["id"], "vector_f32": pack_vector(vector)} if vector is not None else None


def _packed_length(dims: int) -> int:
    """Characters of base64 for ``dims`` float32 values (what ``pack_vector`` writes)."""
    return 4 * ((dims * 4 + 2) // 3)


def _start_enrichment(svc: Services, items: list[SimilarItem]) -> None:
    """New text is recallable now; enrichment follows, off the write path.

    It starts here rather than after persist so that its payload refresh can never be
    overtaken by this upsert of the payload computed before enrichment. ``items`` are
    ``{"id", "vector_f32"}``: the vector travels packed, as between the other stages.
    """
    if not svc.settings.enrichment_enabled or not items:
        return
    send_enrich(svc, [item["id"] for item in items])
    if svc.settings.similar_to_limit > 0:
        send_similar(items)


@stage_actor("refresh_vector_payloads")
def refresh_vector_payloads(memory_ids: list[str]) -> None:
    """Copy enrichment results (tags, type, summary, duplicate_of) from the graph to the points
    whose payload they change; a point that is missing is drift, left to sync.

    Most enrichments change nothing a point holds (no entity in the text, a text too short to
    summarise). Writing such a payload again is not free: Qdrant moves an indexed point out of
    its HNSW segment on any update (ops.bench.probe_edge_moves), so every search scans it until
    the next index build, and the update counts toward that build.
    """
    svc = services()
    skipped = svc.tracker.tombstoned(memory_ids)
    memories = store_call(svc.graph.get_memories)([m for m in memory_ids if m not in skipped])
    stored = store_call(svc.vectors.retrieve)(list(memories))
    wanted = {memory_id: vector_payload(memory) for memory_id, memory in memories.items() if memory_id in stored}
    changed = {m: payload for m, payload in wanted.items() if payload_changed(payload, stored[m].payload)}
    if changed:  # whole payloads: a field enrichment took away (a summary) goes from the point too
        store_call(svc.vectors.replace_payloads)(changed)


@stage_actor("update_vector_payload")
def update_vector_payload(memory_id: str, payload: dict[str, Any]) -> None:
    svc = services()
    store_call(svc.vectors.set_payload)(memory_id, payload)
    svc.tracker.finish([memory_id], "update", UPDATED)


@stage_actor("drop_vectors")
def drop_vectors(memory_ids: list[str]) -> None:
    svc = services()
    store_call(svc.vectors.delete)(memory_ids)
    svc.tracker.finish(memory_ids, "delete", DELETED)
