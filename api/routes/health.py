"""GET /health: open, cheap, and honest about what is reachable."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.responses import ORJSONResponse

from api.deps import get_services
from pipeline.broker import ALL_QUEUES, NAMESPACE
from pipeline.services import Services

router = APIRouter(tags=["health"])


def queue_stats(services: Services) -> tuple[dict[str, int], int]:
    """Messages waiting or in flight per queue, and dead-lettered messages in all."""
    pipe = services.broker_redis.pipeline(transaction=False)
    for queue in ALL_QUEUES:
        pipe.hlen(f"{NAMESPACE}:{queue}.msgs")
        pipe.zcard(f"{NAMESPACE}:{queue}.XQ")
    counts = pipe.execute()
    depths = dict(zip(ALL_QUEUES, counts[0::2]))
    return depths, sum(counts[1::2])


def _probe(check) -> tuple[bool, Any]:
    try:
        return True, check()
    except Exception as exc:
        return False, f"{type(exc).__name__}: {exc}"[:200]


@router.get("/health", summary="Service health (no auth)")
def health(services: Annotated[Services, Depends(get_services)]):
    settings = services.settings
    broker_ok, queue_info = _probe(lambda: queue_stats(services))
    graph_ok, memory_count = _probe(lambda: services.graph.count_memories(settings.excluded_types))
    vectors_ok, vector_count = _probe(lambda: services.vectors.count())
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
        "dead_letter_count": queue_info[1] if broker_ok else None,
        "embedding": {
            "provider": embedder.name,
            "dimensions": embedder.dimensions,
            "semantic": embedder.semantic,
        },
        "graph": settings.falkordb_graph,
        "collection": settings.qdrant_collection,
    }
    if not embedder.semantic:
        body["embedding"]["warning"] = "hash provider active: vectors are not semantic (tests and benchmarks only)"
    if not broker_ok:
        body["broker_error"] = queue_info
    return ORJSONResponse(body, status_code=200 if broker_ok else 503)
