"""One page of a store, read the way every cycle step reads it.

A step reads a page, answers with a ``StepResult`` whose cursor points past it (``None``
once the store is walked), and an empty page ends the phase.
"""

from __future__ import annotations

from typing import Any

from pipeline.maintenance import graph_ops
from pipeline.maintenance.cycles import RunContext, StepResult
from pipeline.resilience import store_call
from pipeline.vectors import VectorRecord


def graph_page(ctx: RunContext, cursor: Any, size: int | None = None) -> tuple[list[dict[str, Any]], StepResult]:
    """The next page of memories from the graph (``size``: the page size by default)."""
    memories, following = store_call(graph_ops.page_memories)(ctx.services.graph, cursor, size or ctx.page_size)
    return memories, StepResult(cursor=following)


def vector_page(ctx: RunContext, cursor: Any) -> tuple[list[VectorRecord], dict[str, dict[str, Any]], StepResult]:
    """The next page of points, and the graph's records of them (a point missing there is drift)."""
    page, following = store_call(ctx.services.vectors.scroll)(cursor, ctx.page_size)
    nodes = store_call(ctx.services.graph.get_memories)([r.memory_id for r in page]) if page else {}
    return page, nodes, StepResult(cursor=following)
