"""POST /associate (client-authored edges, through the queue) and GET /memories/{id}/related."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool

from api.auth import ApiAuth
from api.body import read_json
from api.deps import get_services, get_writes, graph_call
from api.responses import ORJSONResponse
from api.routes.recall import list_param
from api.writes import WritePath
from pipeline.associations import Association, ItemError, is_batch, parse_association, parse_batch
from pipeline.relationships import existing_ids, related
from pipeline.errors import NotFound, ValidationError
from pipeline.relations import DEFAULT_EXPAND_TYPES, known_types
from pipeline.services import Services

router = APIRouter(dependencies=[ApiAuth], tags=["relations"])

RELATED_DEFAULT_LIMIT = 20
RELATED_MAX_LIMIT = 200


def _known_memories(services: Services, memory_ids: set[str]) -> set[str]:
    """Ids that are in the graph, or accepted and still on their way there."""
    found = graph_call(lambda: existing_ids(services.graph, sorted(memory_ids)))
    return found | {m for m in memory_ids - found if services.tracker.pending(m)}


def _missing_message(association: Association, known: set[str]) -> str | None:
    for name in ("memory1_id", "memory2_id"):
        memory_id = getattr(association, name)
        if memory_id not in known:
            return f"{name}: memory {memory_id} not found"
    return None


@router.post("/associate", status_code=201, summary="Link two memories (or a batch of up to 500 pairs)")
async def associate(
    request: Request,
    services: Annotated[Services, Depends(get_services)],
    writes: Annotated[WritePath, Depends(get_writes)],
    wait: Annotated[bool, Query(description="Wait (bounded) until the edges are written.")] = True,
):
    body = await read_json(request, services.settings.max_request_bytes)
    batch = is_batch(body)
    items: list[Association | ItemError] = parse_batch(body) if batch else [parse_association(body)]
    valid = [item for item in items if isinstance(item, Association)]
    known = await run_in_threadpool(_known_memories, services, {m for a in valid for m in (a.memory1_id, a.memory2_id)})

    results: list[Association | ItemError] = []
    for index, item in enumerate(items):
        missing = _missing_message(item, known) if isinstance(item, Association) else None
        results.append(ItemError(index, item.to_message(), missing) if missing else item)
    accepted = [item for item in results if isinstance(item, Association)]
    failed = [item for item in results if isinstance(item, ItemError)]

    if not batch and failed:
        error = failed[0].message
        raise (NotFound if "not found" in error else ValidationError)(error)

    done = True
    if accepted:
        at = datetime.now(timezone.utc).isoformat()
        outcome = await writes.associate(f"associate:{uuid.uuid4()}", [a.to_message() for a in accepted], at, wait)
        done = outcome.done

    if not batch:
        only = accepted[0]
        return ORJSONResponse(
            {"status": "success", "message": "Association created" if done else "Association queued",
             "memory1_id": only.memory1_id, "memory2_id": only.memory2_id,
             "relation_type": only.type, "strength": only.strength, "state": "linked" if done else "queued"},
            status_code=201 if done else 202,
        )
    succeeded = [{"index": i, **item.to_message()} for i, item in enumerate(results) if isinstance(item, Association)]
    payload: dict[str, Any] = {
        "status": "partial_success" if failed else "success",
        "created_count": len(succeeded),
        "failed_count": len(failed),
        "succeeded": succeeded,
        "failed": [item.view() for item in failed],
        "summary": f"{len(succeeded)}/{len(results)} associations created successfully",
        "state": "linked" if done else "queued",
    }
    return ORJSONResponse(payload, status_code=207 if failed else (201 if done else 202))


def _int_param(request: Request, name: str, default: int, low: int, high: int | None, clamp: bool) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError(f"{name}: expected an integer") from None
    if value < low or (high is not None and value > high and not clamp):
        raise ValidationError(f"{name}: must be between {low} and {high}")
    return min(value, high) if high is not None else value


@router.get("/memories/{memory_id}/related", summary="Memories linked to this one, nearest first")
def related_memories(memory_id: str, request: Request, services: Annotated[Services, Depends(get_services)]):
    requested = list_param(request, "relationship_types")
    types, unknown = known_types(requested)
    if unknown:
        raise ValidationError(f"relationship_types: unknown type(s) {', '.join(unknown)}")
    types = types or list(DEFAULT_EXPAND_TYPES)
    max_depth = _int_param(request, "max_depth", 1, 1, 3, clamp=False)
    limit = _int_param(request, "limit", RELATED_DEFAULT_LIMIT, 1, RELATED_MAX_LIMIT, clamp=True)
    exists = graph_call(lambda: services.graph.get_memory(memory_id)) is not None
    rows = graph_call(lambda: related(services.graph, memory_id, types, max_depth, limit)) if exists else []
    if not exists and not services.tracker.pending(memory_id):
        raise NotFound(f"memory {memory_id} not found")
    return ORJSONResponse({
        "status": "success",
        "memory_id": memory_id,
        "relationship_types": types,
        "max_depth": max_depth,
        "count": len(rows),
        "related_memories": rows,
    })
