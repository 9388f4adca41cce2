"""Migrate: move the vector index to a new embedding dimension without a mixed collection.

``POST /admin/reembed`` starts this cycle when the configured dimension differs from the live
collection's (see ``pipeline.vectors.registry``). Phases, one page per step as every cycle:

1. prepare (vectors): create the target collection (a versioned name) and record it as the
   migration's target — from then on every write is embedded for it too and every delete
   and payload change reaches it.
2. copy (graph): walk the graph and queue every memory for embedding into the target
   through the embed queue (items marked ``op=migrate``, for the target only). Each queued id
   goes into the run's *outstanding* set; the vector stage removes it once written (or
   skipped: deleted meanwhile).
3. complete (vectors): wait until the outstanding set is empty (or stops shrinking for
   ``STALL_SECONDS``: a dead-lettered message), then walk the graph again and re-queue every
   memory the target lacks; repeat until a pass finds none missing.
4. switch (vectors): the target becomes live in one atomic step — readers and writers of
   every process follow within ``pipeline.vectors.registry.CACHE_SECONDS``.
5. retire (vectors, ``RETIRE_DELAY_SECONDS`` later): drop the old collection. Until the
   switch, recall searches the old collection with the old embedding, unchanged.

A run that fails abandons its target (writes stop going to it, it is dropped); the live
collection was never touched.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any, Mapping, Sequence

import redis as redis_lib

from pipeline.maintenance import graph_ops
from pipeline.maintenance.cycles import GRAPH, VECTORS, Phase, RunContext, StepResult
from pipeline.maintenance.pages import graph_page
from pipeline.maintenance.runs import state_key
from pipeline.resilience import store_call
from pipeline.stages import MIGRATE_OP, EmbedItem
from pipeline.vectors import vector_payload
from pipeline.vectors.registry import CollectionSpec

WAIT_POLL_SECONDS = 1.0
STALL_SECONDS = 120.0
MAX_VERIFY_PASSES = 20
RETIRE_DELAY_SECONDS = 5.0
STATE_TTL_SECONDS = 7 * 86_400


class MigrationError(RuntimeError):
    pass


def outstanding_key(run_id: str) -> str:
    return state_key(run_id, "outstanding")


def settle_outstanding(client: redis_lib.Redis, items: Sequence[Mapping[str, Any]]) -> None:
    """The write path is done with these copies (written, or skipped as deleted): count them off.

    Installed as the write path's ``copies_settled`` hook (``pipeline.actors``), so the stages
    report to this cycle without importing it.
    """
    by_run: dict[str, list[str]] = defaultdict(list)
    for item in items:
        if item.get("migration"):
            by_run[item["migration"]].append(item["id"])
    for run_id, ids in by_run.items():
        client.srem(outstanding_key(run_id), *ids)


def _target(ctx: RunContext) -> CollectionSpec:
    state = ctx.services.collections.state(fresh=True)
    if state.target is None or state.target_run != ctx.run.id:
        raise MigrationError(f"run {ctx.run.id} no longer owns the migration target")
    return state.target


def _queue_copies(ctx: RunContext, target: CollectionSpec, memories: list[dict[str, Any]]) -> None:
    if not memories:
        return
    key = outstanding_key(ctx.run.id)
    pipe = ctx.runs.redis.pipeline(transaction=False)
    pipe.sadd(key, *[m["id"] for m in memories])
    pipe.expire(key, STATE_TTL_SECONDS)
    pipe.execute()
    copies: list[EmbedItem] = [
        {"id": m["id"], "op": MIGRATE_OP, "text": m["content"], "payload": vector_payload(m),
         "collections": [target.name], "migration": ctx.run.id}
        for m in memories
    ]
    ctx.outbox.embed(copies)


def prepare_step(ctx: RunContext, cursor: Any) -> StepResult:
    before = ctx.services.collections.state(fresh=True)
    target = ctx.services.collections.plan_target(ctx.run.id)
    if before.target is not None and before.target_run != ctx.run.id:
        ctx.services.drop_vector_store(before.target)  # an earlier run's leftover (it died with its lock)
    ctx.services.vector_store(target)  # creates the collection
    result = StepResult()
    result.add("target_dims", target.dims)
    result.samples["target"] = [target.name]
    result.samples["source"] = [ctx.services.collections.state(fresh=True).live.name]
    return result


def copy_step(ctx: RunContext, cursor: Any) -> StepResult:
    target = _target(ctx)
    batch = int(ctx.run.params.get("batch_size") or ctx.page_size)
    memories, result = graph_page(ctx, cursor, batch)
    _queue_copies(ctx, target, memories)
    result.count("processed", [m["id"] for m in memories])
    return result


def complete_step(ctx: RunContext, cursor: Any) -> StepResult:
    """Wait for the queued copies, then verify; loops (through its cursor) until nothing is missing."""
    target = _target(ctx)
    state = cursor or {"stage": "wait", "pass": 1, "left": -1, "since": time.time()}
    if state["stage"] == "wait":
        left = int(ctx.runs.redis.scard(outstanding_key(ctx.run.id)))
        if left and not (left == state["left"] and time.time() - state["since"] > STALL_SECONDS):
            since = state["since"] if left == state["left"] else time.time()
            return StepResult(cursor={**state, "left": left, "since": since}, delay_s=WAIT_POLL_SECONDS)
        state = {"stage": "verify", "pass": state["pass"], "page": None, "missing": 0}

    ids, following = store_call(graph_ops.page_ids)(ctx.services.graph, state["page"], ctx.page_size)
    present = store_call(ctx.services.vector_store(target).retrieve)(ids)
    missing = [m for m in ids if m not in present]
    result = StepResult()
    result.add("verified", len(ids) - len(missing))
    if missing:
        memories = store_call(ctx.services.graph.get_memories)(missing)
        _queue_copies(ctx, target, list(memories.values()))
        result.count("recopied", list(memories))
    total = state["missing"] + len(missing)
    if following is not None:
        result.cursor = {**state, "page": following, "missing": total}
    elif total:
        if state["pass"] >= MAX_VERIFY_PASSES:
            raise MigrationError(f"{total} memories still missing from {target.name} after {state['pass']} passes")
        result.cursor = {"stage": "wait", "pass": state["pass"] + 1, "left": -1, "since": time.time()}
        result.delay_s = WAIT_POLL_SECONDS
    return result


def switch_step(ctx: RunContext, cursor: Any) -> StepResult:
    previous = ctx.services.collections.switch(ctx.run.id)  # None when a redelivery finds it done
    if previous is not None:
        ctx.runs.redis.set(state_key(ctx.run.id, "previous"), previous.to_json(), ex=STATE_TTL_SECONDS)
    result = StepResult(delay_s=RETIRE_DELAY_SECONDS)
    result.samples["live"] = [ctx.services.collections.state(fresh=True).live.name]
    return result


def retire_step(ctx: RunContext, cursor: Any) -> StepResult:
    previous = CollectionSpec.from_json(ctx.runs.redis.get(state_key(ctx.run.id, "previous")))
    result = StepResult()
    if previous is not None and previous.name != ctx.services.collections.state(fresh=True).live.name:
        ctx.services.drop_vector_store(previous)
        result.samples["dropped"] = [previous.name]
    return result


def abandon(services, run_id: str) -> None:
    """A failed run: stop writing to its target and drop it (the live collection is untouched)."""
    target = services.collections.abandon(run_id)
    if target is not None:
        services.drop_vector_store(target)


PHASES = [
    Phase("prepare", VECTORS, prepare_step),
    Phase("copy", GRAPH, copy_step),
    Phase("complete", VECTORS, complete_step),
    Phase("switch", VECTORS, switch_step),
    Phase("retire", VECTORS, retire_step),
]
