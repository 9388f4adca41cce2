"""Maintenance stage: small bookkeeping writes kept off the request path."""

from __future__ import annotations

from pipeline.actor_context import services
from pipeline.resilience import store_call
from pipeline.stages import stage_actor


@stage_actor("record_access")
def record_access(memory_ids: list[str], at: str) -> None:
    """Recall's one write: ``last_accessed`` of the memories it returned, batched."""
    store_call(services().graph.touch)(memory_ids, at)
