"""Decay: a relevance score per memory, on its node only.

One graph page per step; the scores that moved are written to the nodes in one ``UNWIND``
(``relevance_at`` is when a node's score was last written). Only the moved ones: most of an old
store sits at its importance floor, and every write lengthens the graph's append-only log that
a restart replays. Nothing goes to the vector store: a payload write moves an indexed point out
of its HNSW segment, and a daily decay run moves most young memories' scores, so keeping the
score in the payload would leave a large shard scanned rather than searched after every run.
Recall reads the score from the graph (``pipeline.query.graph_reads.relevance_scores``).
"""

from __future__ import annotations

from typing import Any

from pipeline.maintenance import graph_ops
from pipeline.maintenance.cycles import GRAPH, Phase, RunContext, StepResult
from pipeline.maintenance.policy import DecayPolicy
from pipeline.records import iso
from pipeline.resilience import store_call

# A score that moved less than this is left as it is (and reported as unchanged).
CHANGE_EPSILON = 0.001


def score_page(ctx: RunContext, memories: list[dict[str, Any]]) -> dict[str, float]:
    policy = DecayPolicy.from_settings(ctx.settings)
    relations = store_call(graph_ops.relation_counts)(ctx.services.graph, [m["id"] for m in memories])
    return {m["id"]: policy.relevance(m, relations.get(m["id"], 0), ctx.now) for m in memories}


# What scoring reads of a memory (DecayPolicy.relevance), and its score so far.
DECAY_FIELDS = ("id", "importance", "confidence", "timestamp", "last_accessed", "relevance_score")


def decay_step(ctx: RunContext, cursor: Any) -> StepResult:
    graph = ctx.services.graph
    memories, following = store_call(graph_ops.page_fields)(graph, cursor, ctx.page_size, DECAY_FIELDS)
    result = StepResult(cursor=following)
    if not memories:
        return result
    scores = score_page(ctx, memories)
    changed = {
        m["id"]: scores[m["id"]] for m in memories
        if m.get("relevance_score") is None or abs(float(m["relevance_score"]) - scores[m["id"]]) >= CHANGE_EPSILON
    }
    result.add("scored", len(memories))
    result.count("changed", list(changed))
    for bound in (0.5, 0.2, 0.05):
        result.add(f"below_{bound}", sum(1 for s in scores.values() if s < bound))
    if not ctx.dry_run:
        store_call(graph_ops.set_relevance)(graph, changed, iso(ctx.now), ctx.settings.graph_write_rows)
    return result


PHASES = [Phase("score", GRAPH, decay_step)]
