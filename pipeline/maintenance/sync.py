"""Drift repair: make the vector index agree with the graph, the record.

Three phases, one page per step, all on the vector queue (they read the vector store):

1. survey, vectors → graph: finds every point whose memory is not in the graph
   (``orphan_vector``), whose payload disagrees with its node on a field recall filters or
   scores on (``payload_mismatch``), or whose text is not the node's content
   (``stale_content``). It changes nothing: the ids found are kept in the run's state.
2. repair: first the sync guard (``pipeline.maintenance.sync_guard``) decides whether the
   orphans may be deleted at all; when they may not, the run stops here, refused, having
   changed nothing. Otherwise, re-checking each id against the graph first: orphans are copied
   into the quarantine and then deleted (orphans of memories deleted on request, tombstoned,
   are deleted outright), payloads are rewritten from their nodes, stale points re-embedded.
3. graph → vectors: every memory without a point is re-embedded through the embed queue
   (``missing_vector``).

The survey comes first so that nothing is repaired from a graph the guard would not trust.
Memories still in the write pipeline (a pending record in the tracker) are skipped: their
vector is on its way, not missing. Internal artifact types (RECALL_EXCLUDED_TYPES) are left
out of drift, as AutoMem does; orphans are handled whatever their type.
"""

from __future__ import annotations

import math
from typing import Any

from pipeline.maintenance import graph_ops
from pipeline.maintenance.cycles import VECTORS, Phase, RunContext, StepResult
from pipeline.maintenance.pages import vector_page
from pipeline.maintenance.quarantine import Quarantine
from pipeline.maintenance.runs import state_key
from pipeline.maintenance.sync_guard import GuardState, verdict
from pipeline.resilience import store_call
from pipeline.vectors import vector_payload

SYNCED_FIELDS = ("tags", "tag_prefixes", "tags_lower", "importance", "type", "timestamp", "timestamp_epoch",
                 "archived", "archived_at", "lifecycle")
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


def _embed_item(memory: dict[str, Any]) -> dict[str, Any]:
    return {"id": memory["id"], "op": "store", "text": memory["content"], "payload": vector_payload(memory)}


# What the survey found, kept per run until the repair phase: one sorted set of ids per kind
# (all scored 0, so they page in id order; adding an id twice, as a redelivered step does, is a no-op).
FOUND = ("orphan_vector", "tombstoned_orphan", "payload_mismatch", "stale_content")


def _found_key(ctx: RunContext, kind: str) -> str:
    return state_key(ctx.run.id, f"found:{kind}")


def _remember(ctx: RunContext, kind: str, ids: list[str]) -> None:
    if ids:
        ctx.runs.redis.zadd(_found_key(ctx, kind), dict.fromkeys(ids, 0))


def vectors_to_graph_step(ctx: RunContext, cursor: Any) -> StepResult:
    """The survey: count and remember drift, change nothing (the guard decides on it next)."""
    page, nodes, result = vector_page(ctx, cursor)
    if not page:
        return result
    busy = ctx.services.tracker.in_pipeline([r.memory_id for r in page])
    excluded = ctx.settings.excluded_types
    orphans, rewrites, stale = [], [], []
    for record in page:
        memory = nodes.get(record.memory_id)
        if record.memory_id in busy:
            continue
        if memory is None:
            orphans.append(record.memory_id)
        elif memory.get("type") in excluded:
            continue
        elif record.payload.get("content") not in (None, memory.get("content")):
            stale.append(record.memory_id)
        elif payload_drift(vector_payload(memory), record.payload):
            rewrites.append(record.memory_id)
    deleted = ctx.services.tracker.tombstoned(orphans)  # deleted on request: their points go without guard
    result.add("vectors_checked", len(page))
    result.count("orphan_vector", orphans)
    result.count("payload_mismatch", rewrites)
    result.count("stale_content", stale)
    _remember(ctx, "orphan_vector", [m for m in orphans if m not in deleted])
    _remember(ctx, "tombstoned_orphan", sorted(deleted))
    _remember(ctx, "payload_mismatch", rewrites)
    _remember(ctx, "stale_content", stale)
    return result


def _guard(ctx: RunContext) -> StepResult:
    """The repair phase's first step: may the orphans the survey found be deleted?"""
    settings = ctx.settings
    orphans = int(ctx.runs.redis.zcard(_found_key(ctx, "orphan_vector")))
    checked = ctx.runs.counts_so_far(ctx.run.id).get("vectors_checked", 0)
    memories = store_call(ctx.services.graph.count_memories)() if orphans else 1
    reason = verdict(orphans, checked, memories, settings.sync_orphan_max_share, settings.sync_orphan_max_count)
    if ctx.dry_run:
        result = StepResult()  # a dry run reports the verdict and repairs nothing
        result.add("guard_would_refuse", 1 if reason else 0)
        return result
    guard = GuardState(ctx.runs.redis)
    if reason:
        guard.trip(ctx.run.id, reason, orphans, checked)
        result = StepResult(refused=f"sync guard: deleted nothing: {reason}")
        result.add("guard_refused", 1)
        return result
    guard.clear()
    return StepResult(cursor=[0, ""])


def repair_step(ctx: RunContext, cursor: Any) -> StepResult:
    """Guard first, then one page of one kind of what the survey found, re-checked against the graph."""
    if cursor is None:
        return _guard(ctx)
    index, after = cursor
    kind = FOUND[index]
    low = f"({after}" if after else "-"
    ids = [i.decode() for i in ctx.runs.redis.zrangebylex(_found_key(ctx, kind), low, "+", start=0, num=ctx.page_size)]
    following = [index, ids[-1]] if len(ids) == ctx.page_size else ([index + 1, ""] if index + 1 < len(FOUND) else None)
    result = StepResult(cursor=following)
    if not ids:
        return result
    nodes = store_call(ctx.services.graph.get_memories)(ids)
    busy = ctx.services.tracker.in_pipeline(ids)
    ids = [m for m in ids if m not in busy]
    vectors = ctx.services.vectors
    if kind in ("orphan_vector", "tombstoned_orphan"):
        gone = [m for m in ids if m not in nodes]  # a memory written since the survey keeps its point
        if kind == "orphan_vector" and gone:
            points = store_call(vectors.retrieve)(gone, with_vectors=True)
            kept = {m: {"payload": p.payload, "vector": p.vector} for m, p in points.items()}
            Quarantine(ctx.runs.redis).put(kept, "orphan_vector", ctx.run.id)  # before the delete, never after
            result.add("quarantined", len(kept))
        if gone:
            store_call(vectors.delete)(gone)
        result.add("orphans_deleted", len(gone))
    elif kind == "payload_mismatch":
        present = [nodes[m] for m in ids if m in nodes and nodes[m].get("type") not in ctx.settings.excluded_types]
        if present:
            store_call(vectors.replace_payloads)({m["id"]: vector_payload(m) for m in present})
    elif kind == "stale_content":
        present = [nodes[m] for m in ids if m in nodes and nodes[m].get("type") not in ctx.settings.excluded_types]
        if present:
            ctx.outbox.embed([_embed_item(m) for m in present])
    return result


def graph_to_vectors_step(ctx: RunContext, cursor: Any) -> StepResult:
    """Memories without a point are re-embedded. Read as ids and types first: at most a few
    are missing, and only theirs are read whole (with Edge this runs in the web, beside recall)."""
    page, following = store_call(graph_ops.page_fields)(ctx.services.graph, cursor, ctx.page_size, ("id", "type"))
    result = StepResult(cursor=following)
    ids = [m["id"] for m in page if m.get("type") not in ctx.settings.excluded_types]
    if not ids:
        return result
    present = store_call(ctx.services.vectors.existing)(ids)
    absent = [m for m in ids if m not in present]
    busy = ctx.services.tracker.in_pipeline(absent)  # their vector is on its way, not missing
    missing = [m for m in absent if m not in busy]
    result.add("memories_checked", len(ids))
    result.count("missing_vector", missing)
    if missing and not ctx.dry_run:
        memories = store_call(ctx.services.graph.get_memories)(missing)
        ctx.outbox.embed([_embed_item(memories[m]) for m in missing if m in memories])
    return result


PHASES = [
    Phase("vectors_to_graph", VECTORS, vectors_to_graph_step),
    Phase("repair", VECTORS, repair_step),
    Phase("graph_to_vectors", VECTORS, graph_to_vectors_step),
]
