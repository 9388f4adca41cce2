"""Decay: a relevance score per memory, on the node and in the vector payload.

One graph page per step; the score is written to the nodes in one ``UNWIND`` and the
payload change goes to the vector queue only for memories whose score moved.
"""

from __future__ import annotations

from typing import Any

from pipeline.maintenance import graph_ops
from pipeline.maintenance.cycles import GRAPH, Phase, RunContext, StepResult
from pipeline.maintenance.pages import graph_page
from pipeline.maintenance.policy import DecayPolicy
from pipeline.records import iso
from pipeline.resilience import store_call

# Payload rewrites below this change are not worth a vector-queue message.
PAYLOAD_EPSILON = 0.001


def score_page(ctx: RunContext, memories: list[dict[str, Any]]) -> dict[str, float]:
    policy = DecayPolicy.from_settings(ctx.settings)
    relations = store_call(graph_ops.relation_counts)(ctx.services.graph, [m["id"] for m in memories])
    return {m["id"]: policy.relevance(m, relations.get(m["id"], 0), ctx.now) for m in memories}


def decay_step(ctx: RunContext, cursor: Any) -> StepResult:
    graph = ctx.services.graph
    memories, result = graph_page(ctx, cursor)
    if not memories:
        return result
    scores = score_page(ctx, memories)
    changed = {
        m["id"]: scores[m["id"]]
        for m in memories
        if m.get("relevance_score") is None or abs(float(m["relevance_score"]) - scores[m["id"]]) >= PAYLOAD_EPSILON
    }
    result.add("scored", len(memories))
    result.count("changed", list(changed))
    for bound in (0.5, 0.2, 0.05):
        result.add(f"below_{bound}", sum(1 for s in scores.values() if s < bound))
    if not ctx.dry_run:
        store_call(graph_ops.set_relevance)(graph, scores, iso(ctx.now))
        if changed:
            ctx.outbox.patch_payloads({memory_id: {"relevance_score": score} for memory_id, score in changed.items()})
    return result


PHASES = [Phase("score", GRAPH, decay_step)]
