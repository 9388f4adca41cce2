"""/memory/{id}: fetch, update, delete. (``POST /memory``, storing one, is ``api.single_write``'s.)"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool

from api.auth import ApiAuth
from api.body import read_json
from api.deps import get_limits, get_services, get_writes, graph_call
from api.responses import ORJSONResponse
from api.writes import WritePath
from pipeline.errors import Conflict, NotFound, Unavailable
from pipeline.records import build_patch
from pipeline.services import Services
from pipeline.tracking import FAILED, QUEUED

router = APIRouter(dependencies=[ApiAuth], tags=["memory"])

WaitParam = Annotated[bool, Query(description="Wait (bounded by WRITE_WAIT_SECONDS) until the write is recallable.")]


def _graph_lookup(services: Services, memory_id: str) -> dict[str, Any] | None:
    return graph_call(lambda: services.graph.get_memory(memory_id))


def _pending_view(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in ("embedding", "type_source", "id")}


@router.get("/memory/{memory_id}", summary="Fetch one memory (202 while it is still in the pipeline)")
def get_memory(memory_id: str, services: Annotated[Services, Depends(get_services)]):
    pending = services.tracker.pending(memory_id)
    try:
        memory = _graph_lookup(services, memory_id)
    except Unavailable:
        if pending is None or pending["state"] not in (QUEUED, FAILED):
            raise
        memory = None  # not in the graph yet: the tracker's record answers even while the graph is down
    if memory is not None:
        body = {"status": "success", "memory": memory}
        if pending:
            body["state"] = pending["state"]  # failed: stored in the graph, but not recallable
            if "reason" in pending:
                body["reason"] = pending["reason"]
        return ORJSONResponse(body)
    if pending and pending["state"] == FAILED:
        return ORJSONResponse(
            {
                "status": "failed",
                "memory_id": memory_id,
                "state": FAILED,
                "reason": pending.get("reason"),
                "message": "the write failed after its retries (see reason) and is not recallable; its message is "
                           "kept in the dead-letter queue, and replaying it (POST /admin/deadletters/replay) completes it",
                "memory": _pending_view(pending["record"]),
            },
            status_code=202,
        )
    if pending:
        return ORJSONResponse(
            {
                "status": "pending",
                "memory_id": memory_id,
                "state": pending["state"],
                "message": "memory accepted and queued; not yet persisted",
                "memory": _pending_view(pending["record"]),
            },
            status_code=202,
        )
    raise NotFound(f"memory {memory_id} not found")


async def _require_existing(services: Services, memory_id: str) -> None:
    memory = await run_in_threadpool(_graph_lookup, services, memory_id)
    if memory is None:
        if pending := await run_in_threadpool(services.tracker.pending, memory_id):
            if pending["state"] == FAILED:
                raise Conflict(f"memory {memory_id} was not stored: its write failed ({pending.get('reason')}); "
                               "replay it from the dead-letter queue first")
            raise Conflict(f"memory {memory_id} is still being written; retry once it is stored")
        raise NotFound(f"memory {memory_id} not found")


@router.patch("/memory/{memory_id}", summary="Update fields of a memory (re-embeds when content changes)")
async def update_memory(
    memory_id: str,
    request: Request,
    services: Annotated[Services, Depends(get_services)],
    writes: Annotated[WritePath, Depends(get_writes)],
    wait: WaitParam = True,
):
    body = await read_json(request, services.settings.max_request_bytes)
    changes = build_patch(body, get_limits(request))
    await _require_existing(services, memory_id)
    outcome = await writes.update(memory_id, changes, wait)
    return ORJSONResponse(
        {"status": "success", "memory_id": memory_id, "state": outcome.state, "updated": sorted(changes)},
        status_code=200 if outcome.done else 202,
    )


@router.delete("/memory/{memory_id}", summary="Delete a memory from the graph and the vector index")
async def delete_memory(
    memory_id: str,
    services: Annotated[Services, Depends(get_services)],
    writes: Annotated[WritePath, Depends(get_writes)],
    wait: WaitParam = True,
):
    memory = await run_in_threadpool(_graph_lookup, services, memory_id)
    if memory is None and not await run_in_threadpool(services.tracker.pending, memory_id):
        raise NotFound(f"memory {memory_id} not found")
    outcome = await writes.delete(memory_id, wait)
    return ORJSONResponse(
        {"status": "success", "memory_id": memory_id, "state": outcome.state},
        status_code=200 if outcome.done else 202,
    )
