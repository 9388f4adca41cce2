"""Drift repair: make the vector index agree with the graph, the record.

Two walks, one page per step, both on the vector queue (they read the vector store):

1. vectors → graph: every point whose memory no longer exists is deleted (``orphan_vector``);
   every payload that disagrees with its node on a field recall filters or scores on is
   rewritten from the node (``payload_mismatch``); a point whose text is not the node's
   content is re-embedded (``stale_content``).
2. graph → vectors: every memory without a point is re-embedded through the embed queue
   (``missing_vector``).

Memories still in the write pipeline (a pending record in the tracker) are skipped: their
vector is on its way, not missing. Internal artifact types (RECALL_EXCLUDED_TYPES) are left
out of drift, as AutoMem does; orphans are deleted whatever their type.
"""

from __future__ import annotations

import math
from typing import Any

from pipeline.maintenance import graph_ops
from pipeline.maintenance.cycles import VECTORS, Phase, RunContext, StepResult
from pipeline.resilience import store_call
from pipeline.tracking import pending_key
from pipeline.vectors import vector_payload

SYNCED_FIELDS = ("tags", "tag_prefixes", "tags_lower", "importance", "type", "timestamp", "timestamp_epoch",
                 "archived", "archived_at", "lifecycle", "relevance_score")
DRIFT_KINDS = ("orphan_vector", "payload_mismatch", "stale_content", "missing_vector")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and not isinstance(b, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-6)
    return a == b


def payload_drift(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """The synced fields on which a point's payload disagrees with its node."""
    differing = []
    for name in SYNCED_FIELDS:
        want, have = expected.get(name), actual.get(name)
        if name == "archived":
            want, have = bool(want), bool(have)
        if not _same(want, have):
            differing.append(name)
    return differing


def _pending(ctx: RunContext, memory_ids: list[str]) -> set[str]:
    if not memory_ids:
        return set()
    pipe = ctx.services.broker_redis.pipeline(transaction=False)
    for memory_id in memory_ids:
        pipe.exists(pending_key(memory_id))
    return {m for m, flag in zip(memory_ids, pipe.execute()) if flag}


def _embed_item(memory: dict[str, Any]) -> dict[str, Any]:
    return {"id": memory["id"], "op": "store", "text": memory["content"], "payload": vector_payload(memory)}


def vectors_to_graph_step(ctx: RunContext, cursor: Any) -> StepResult:
    vectors = ctx.services.vectors
    page, next_offset = store_call(vectors.scroll)(cursor, ctx.page_size)
    result = StepResult(cursor=next_offset)
    if not page:
        return result
    ids = [r.memory_id for r in page]
    nodes = store_call(ctx.services.graph.get_memories)(ids)
    busy = _pending(ctx, ids)
    excluded = ctx.settings.excluded_types
    orphans, rewrites, stale = [], {}, []
    for record in page:
        memory = nodes.get(record.memory_id)
        if record.memory_id in busy:
            continue
        if memory is None:
            orphans.append(record.memory_id)
        elif memory.get("type") in excluded:
            continue
        elif record.payload.get("content") not in (None, memory.get("content")):
            stale.append(memory)
        elif payload_drift(expected := vector_payload(memory), record.payload):
            rewrites[record.memory_id] = expected
    result.add("vectors_checked", len(page))
    result.count("orphan_vector", orphans)
    result.count("payload_mismatch", list(rewrites))
    result.count("stale_content", [m["id"] for m in stale])
    if not ctx.dry_run:
        if orphans:
            store_call(vectors.delete)(orphans)
        if rewrites:
            store_call(vectors.set_payloads)(rewrites)
        if stale:
            ctx.outbox.embed([_embed_item(m) for m in stale])
    return result


def graph_to_vectors_step(ctx: RunContext, cursor: Any) -> StepResult:
    memories, following = store_call(graph_ops.page_memories)(ctx.services.graph, cursor, ctx.page_size)
    result = StepResult(cursor=following)
    memories = [m for m in memories if m.get("type") not in ctx.settings.excluded_types]
    if not memories:
        return result
    ids = [m["id"] for m in memories]
    present = store_call(ctx.services.vectors.retrieve)(ids)
    busy = _pending(ctx, ids)
    missing = [m for m in memories if m["id"] not in present and m["id"] not in busy]
    result.add("memories_checked", len(memories))
    result.count("missing_vector", [m["id"] for m in missing])
    if missing and not ctx.dry_run:
        ctx.outbox.embed([_embed_item(m) for m in missing])
    return result


PHASES = [
    Phase("vectors_to_graph", VECTORS, vectors_to_graph_step),
    Phase("graph_to_vectors", VECTORS, graph_to_vectors_step),
]
