"""Forget (opt-in): archive what has faded, delete what has all but vanished.

Relevance is computed here with the decay policy (not read from the last decay run), so
forgetting is right even when decay has not run. Protected memories — young ones, important
ones, protected types — are never touched. Deletes remove the node and, through the vector
queue, its vector.
"""

from __future__ import annotations

from typing import Any

from pipeline.maintenance import graph_ops
from pipeline.maintenance.cycles import GRAPH, Phase, RunContext, StepResult
from pipeline.maintenance.decay import DECAY_FIELDS, score_page
from pipeline.maintenance.policy import ARCHIVE, DELETE, PROTECTED, ForgetPolicy
from pipeline.records import iso
from pipeline.resilience import store_call
from pipeline.vectors import archived_payload


# What the verdict reads of a memory (ForgetPolicy.verdict), beside what scoring reads.
FORGET_FIELDS = DECAY_FIELDS + ("type", "archived")


def forget_step(ctx: RunContext, cursor: Any) -> StepResult:
    graph = ctx.services.graph
    memories, following = store_call(graph_ops.page_fields)(graph, cursor, ctx.page_size, FORGET_FIELDS)
    result = StepResult(cursor=following)
    if not memories:
        return result
    policy = ForgetPolicy.from_settings(ctx.settings)
    scores = score_page(ctx, memories)
    verdicts: dict[str, list[str]] = {ARCHIVE: [], DELETE: [], PROTECTED: []}
    for memory in memories:
        verdict = policy.verdict(memory, scores[memory["id"]], ctx.now)
        if verdict in verdicts:
            verdicts[verdict].append(memory["id"])
    result.add("examined", len(memories))
    result.count("archived", verdicts[ARCHIVE])
    result.count("deleted", verdicts[DELETE])
    result.add("protected", len(verdicts[PROTECTED]))
    if ctx.dry_run:
        return result
    if verdicts[ARCHIVE]:
        store_call(graph_ops.archive)(graph, verdicts[ARCHIVE], iso(ctx.now))
        ctx.outbox.patch_payloads({m: archived_payload(iso(ctx.now)) for m in verdicts[ARCHIVE]})
    if verdicts[DELETE]:
        ctx.services.tracker.tombstone(verdicts[DELETE])  # a write still in flight for it is dropped too
        store_call(graph.delete_memories)(verdicts[DELETE])
        ctx.outbox.drop_vectors(verdicts[DELETE])
    return result


PHASES = [Phase("forget", GRAPH, forget_step)]
