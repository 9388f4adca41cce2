"""Recover: rebuild memories the graph lost from what the vector side still holds.

A vector point's payload carries a memory's content, tags, metadata, importance, type and
times, so a memory whose node is gone can be rebuilt from it. Two phases, one page per step,
on the vector queue:

1. from_vectors: every point in the index whose memory is missing from the graph gets its
   node back (after a wiped or wrong graph, when the sync guard refused to delete them);
2. from_quarantine: every point sync quarantined gets its node back (when missing) and its
   point back (re-embedded through the embed queue, so it fits the live collection whatever
   happened to the embedding since), then leaves the quarantine.

Nodes are only ever created, never overwritten (``MERGE … ON CREATE``): a memory written or
restored meanwhile keeps what it has. Memories deleted on request (tombstoned) stay deleted,
and ones still in the write pipeline are left to it. Relations are not in the payloads: edges
lost with the graph come back only from a backup (``ops.restore``). A real run that finishes
clears the sync guard.
"""

from __future__ import annotations

from typing import Any

from pipeline.graph import node_properties
from pipeline.maintenance.cycles import VECTORS, Phase, RunContext, StepResult
from pipeline.maintenance.pages import vector_page
from pipeline.maintenance.quarantine import Quarantine
from pipeline.maintenance.sync_guard import GuardState
from pipeline.resilience import store_call

# The record fields a payload carries as the node has them (metadata travels as an object).
RECORD_FIELDS = ("content", "tags", "importance", "confidence", "type", "type_source", "timestamp", "updated_at",
                 "t_valid", "t_invalid", "summary", "duplicate_of")


def node_from_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """The node properties of a memory, rebuilt from its vector payload."""
    fields = {name: payload[name] for name in RECORD_FIELDS if payload.get(name) is not None}
    props = node_properties({**fields, "metadata": payload.get("metadata") or {}})
    if payload.get("archived"):
        props["archived"] = True
        props["archived_at"] = payload.get("archived_at") or "archived"
    if payload.get("relevance_score") is not None:
        props["relevance_score"] = float(payload["relevance_score"])
    return props


def create_missing_nodes(graph, payloads: dict[str, dict[str, Any]], at: str) -> None:
    if payloads:
        graph.run_write(
            "UNWIND $rows AS row MERGE (m:Memory {id: row.id}) ON CREATE SET m += row.props, m.recovered_at = $at",
            {"rows": [{"id": m, "props": node_from_payload(p)} for m, p in payloads.items()], "at": at},
        )


def _left_alone(ctx: RunContext, memory_ids: list[str]) -> set[str]:
    """Ids recovery must not touch: deleted on request, or still in the write pipeline."""
    return ctx.services.tracker.in_pipeline(memory_ids) | ctx.services.tracker.tombstoned(memory_ids)


def from_vectors_step(ctx: RunContext, cursor: Any) -> StepResult:
    if cursor is None and not ctx.dry_run:
        # A graph that was lost whole comes back without its indexes (full-text recall needs
        # them), and with new property ids this process must not read with old names.
        ctx.services.graph.forget_schema()
        store_call(ctx.services.graph.ensure_schema)(content_fulltext=ctx.services.settings.graph_content_fulltext)
    page, nodes, result = vector_page(ctx, cursor)
    if not page:
        return result
    skip = _left_alone(ctx, [r.memory_id for r in page])
    lost = {r.memory_id: r.payload for r in page if r.memory_id not in nodes and r.memory_id not in skip
            and r.payload.get("content") is not None}
    result.add("vectors_checked", len(page))
    result.count("restored_from_vectors", sorted(lost))
    if lost and not ctx.dry_run:
        store_call(create_missing_nodes)(ctx.services.graph, lost, ctx.now.isoformat())
    return result


def from_quarantine_step(ctx: RunContext, cursor: Any) -> StepResult:
    quarantine = Quarantine(ctx.runs.redis)
    entries = quarantine.page(cursor, ctx.page_size)
    result = StepResult(cursor=entries[-1][0] if len(entries) == ctx.page_size else None)
    if not entries:
        return _finished(ctx, result)
    ids = [m for m, _ in entries]
    deleted = ctx.services.tracker.tombstoned(ids)  # deleted on request since: they leave the quarantine
    skip = deleted | ctx.services.tracker.in_pipeline(ids)
    back = {m: e["payload"] for m, e in entries if m not in skip and e.get("payload", {}).get("content") is not None}
    result.count("restored_from_quarantine", sorted(back))
    result.count("quarantine_deleted_since", sorted(deleted))
    if not ctx.dry_run:
        at = ctx.now.isoformat()
        nodes = store_call(ctx.services.graph.get_memories)(list(back))
        # A node written since the quarantine is the newer record: it keeps its content, and
        # sync gives it a point if it has none. One this run created (a redelivered step) is
        # re-embedded again, as the message that did so may not have been sent.
        lost = {m: p for m, p in back.items() if m not in nodes or nodes[m].get("recovered_at") == at}
        store_call(create_missing_nodes)(ctx.services.graph, lost, at)
        if lost:
            ctx.outbox.embed([{"id": m, "op": "store", "text": p["content"], "payload": p} for m, p in lost.items()])
        quarantine.remove(sorted(set(back) | deleted))  # only once node and point are on their way back
    return _finished(ctx, result) if result.cursor is None else result


def _finished(ctx: RunContext, result: StepResult) -> StepResult:
    if not ctx.dry_run:
        GuardState(ctx.runs.redis).clear()
    return result


PHASES = [
    Phase("from_vectors", VECTORS, from_vectors_step),
    Phase("from_quarantine", VECTORS, from_quarantine_step),
]
