"""GET /health: open, cheap, and honest about what is reachable."""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import Annotated, Any

from dramatiq.common import dq_name, xq_name
from fastapi import APIRouter, Depends

from api.deps import get_services
from api.responses import ORJSONResponse
from pipeline.broker import NAMESPACE, held_messages_key
from pipeline.stages import ALL_QUEUES
from pipeline.services import Services

log = logging.getLogger(__name__)
router = APIRouter(tags=["health"])


def queue_stats(services: Services) -> tuple[dict[str, int], dict[str, int], int]:
    """Per queue, messages waiting or in flight and messages delayed; dead-lettered messages in all.

    A delayed message (a retry waiting out its backoff, a held maintenance step) sits in the
    queue's delay queue, ``<q>.DQ``, until it is due: work still owed that the first count
    does not show."""
    pipe = services.broker_redis.pipeline(transaction=False)
    for queue in ALL_QUEUES:
        pipe.hlen(held_messages_key(queue))
        pipe.hlen(held_messages_key(dq_name(queue)))
        pipe.zcard(f"{NAMESPACE}:{xq_name(queue)}")
    counts = pipe.execute()
    return dict(zip(ALL_QUEUES, counts[0::3])), dict(zip(ALL_QUEUES, counts[1::3])), sum(counts[2::3])


def drift_summary(services: Services, memory_count: int | None, vector_count: int | None) -> dict[str, Any]:
    """Drift as the last sync found it (by kind), and the live gap between the two counts."""
    from api.maintenance import run_store
    from pipeline.maintenance.sync import DRIFT_KINDS

    summary: dict[str, Any] = {
        "count_gap": None if memory_count is None or vector_count is None else vector_count - memory_count,
    }
    try:
        last = run_store(services).last_finished("sync")
    except Exception:
        last = None
    try:
        summary["sync_guard"] = sync_guard_report(services)
    except Exception:  # the broker being down is what /health reports first ("broker")
        pass
    if last is not None:
        counts = last.get("counts") or {}
        summary["last_sync"] = {
            "run_id": last["run_id"],
            "finished_at": last.get("finished_at"),
            "dry_run": last["dry_run"],
            "status": last["status"],
            **{kind: counts.get(kind, 0) for kind in DRIFT_KINDS},
        }
    return summary


def sync_guard_report(services: Services) -> dict[str, Any]:
    """Whether sync refused to delete orphan vectors (and why), and how many points it quarantined."""
    from pipeline.maintenance.quarantine import Quarantine
    from pipeline.maintenance.sync_guard import GuardState

    tripped = GuardState(services.broker_redis).read()
    report: dict[str, Any] = tripped or {"status": "ok"}
    if tripped:
        report["at"] = datetime.fromtimestamp(tripped["at"], tz=timezone.utc).isoformat()
        report["action"] = "no orphan vector is deleted until this clears; POST /admin/sync/recover rebuilds the graph from them"
    report["quarantined"] = Quarantine(services.broker_redis).count()
    return report


def _probe(what: str, check) -> tuple[bool, Any]:
    """(True, the answer) or (False, the error's kind). The error's text names hosts and ports:
    it goes to the log, not into this open answer."""
    try:
        return True, check()
    except Exception as exc:
        log.warning("health: %s check failed: %s", what, exc)
        return False, type(exc).__name__


@router.get("/health", summary="Service health (no auth)")
def health(services: Annotated[Services, Depends(get_services)]):
    settings = services.settings
    broker_ok, queue_info = _probe("broker", lambda: queue_stats(services))
    graph_ok, memory_count = _probe("graph", lambda: services.graph.count_memories(settings.excluded_types))
    # Internal artifacts (MetaPattern) are left out of both counts, so they never read as drift.
    vectors_ok, vector_count = _probe("vectors", lambda: services.vectors.count_memories(settings.excluded_types))
    status = "healthy" if broker_ok and graph_ok and vectors_ok else ("degraded" if broker_ok else "unhealthy")
    embedder = services.embedder
    body: dict[str, Any] = {
        "status": status,
        "timestamp": datetime.now(timezone.utc).isoformat(),
        "broker": "connected" if broker_ok else "unavailable",
        "falkordb": "connected" if graph_ok else "unavailable",
        "qdrant": "connected" if vectors_ok else "unavailable",
        "vector_backend": services.vectors.backend if vectors_ok else None,
        "memory_count": memory_count if graph_ok else None,
        "vector_count": vector_count if vectors_ok else None,
        "queues": queue_info[0] if broker_ok else None,
        "delayed": queue_info[1] if broker_ok else None,
        "dead_letter_count": queue_info[2] if broker_ok else None,
        # writes that exhausted their retries: not recallable, replayable from the dead-letter queue
        "failed_writes": _probe("failed writes", services.tracker.failed_count)[1] if broker_ok else None,
        "embedding": {
            "provider": embedder.name,
            "dimensions": embedder.dimensions,
            "semantic": embedder.semantic,
        },
        "graph": settings.falkordb_graph,
        "collection": settings.qdrant_collection,
    }
    if broker_ok:
        _, collections = _probe("collections", services.collections.describe)
        body["vectors"] = collections  # the live collection, and a dimension migration in progress
    body["drift"] = drift_summary(services, memory_count if graph_ok else None, vector_count if vectors_ok else None)
    if body["drift"].get("sync_guard", {}).get("status") == "tripped" and status == "healthy":
        body["status"] = "degraded"  # the graph lost memories the vector side still holds
    if not embedder.semantic:
        body["embedding"]["warning"] = "hash provider active: vectors are not semantic (tests and benchmarks only)"
    if not broker_ok:
        body["broker_error"] = queue_info
    return ORJSONResponse(body, status_code=200 if broker_ok else 503)
