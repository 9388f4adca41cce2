"""Maintenance stage: small bookkeeping writes kept off the request path."""

from __future__ import annotations

import dramatiq

from pipeline.actors.context import services
from pipeline.broker import MAINTENANCE_QUEUE
from pipeline.resilience import store_call


@dramatiq.actor(queue_name=MAINTENANCE_QUEUE)
def record_access(memory_ids: list[str], at: str) -> None:
    """Recall's one write: ``last_accessed`` of the memories it returned, batched."""
    store_call(services().graph.touch)(memory_ids, at)
