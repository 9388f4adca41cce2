"""Re-embed: rebuild vectors from the graph through the embed queue.

For a model change at the same dimension (``force``), or to fill in what is missing. Walks the
graph in pages of ``batch_size``; stops after ``limit`` memories when one is given. A change
of dimension is a different collection, not a re-embed in place: see docs/maintenance.md.
"""

from __future__ import annotations

from typing import Any

from pipeline.maintenance import graph_ops
from pipeline.maintenance.cycles import VECTORS, Phase, RunContext, StepResult
from pipeline.maintenance.sync import _embed_item
from pipeline.resilience import store_call


def reembed_step(ctx: RunContext, cursor: Any) -> StepResult:
    params = ctx.run.params
    batch = int(params.get("batch_size") or 32)
    limit = params.get("limit")
    after, done = (cursor or [None, 0])
    if limit is not None and done >= int(limit):
        return StepResult()
    size = batch if limit is None else min(batch, int(limit) - done)
    page, following = store_call(graph_ops.page_memories)(ctx.services.graph, after, size)
    result = StepResult(cursor=[following, done + len(page)] if following is not None else None)
    memories = [m for m in page if m.get("type") not in ctx.settings.excluded_types]
    if not params.get("force") and memories:
        present = store_call(ctx.services.vectors.retrieve)([m["id"] for m in memories])
        memories = [m for m in memories if m["id"] not in present]
    result.add("scanned", len(page))
    result.count("processed", [m["id"] for m in memories])
    if memories and not ctx.dry_run:
        ctx.outbox.embed([_embed_item(m) for m in memories])
    return result


PHASES = [Phase("reembed", VECTORS, reembed_step)]
