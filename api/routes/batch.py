"""POST /memory/batch: up to BATCH_MAX_ITEMS memories in one round trip, per-item results."""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from api.auth import ApiAuth
from api.body import read_json
from api.deps import get_limits, get_services, get_writes
from api.responses import ORJSONResponse
from api.writes import WritePath
from pipeline.batching import ACCEPTED, ERROR, UNCHANGED, ValidatedBatch, extract_items, mark_unchanged, validate_batch
from pipeline.services import Services

log = logging.getLogger(__name__)
router = APIRouter(dependencies=[ApiAuth], tags=["memory"])


def _skip_unchanged(services: Services, batch: ValidatedBatch) -> None:
    """Mark items already stored as they are. A read only: if the graph is down, queue them all."""
    ids = [item.record.id for item in batch.valid]
    if not ids:
        return
    try:
        stored = services.graph.get_memories(ids)
    except Exception as exc:  # writes never depend on the stores
        log.warning("batch: graph unreadable (%s); queueing every item", exc)
        return
    mark_unchanged(batch, stored)


async def ingest_batch(services: Services, writes: WritePath, items: list[Any], limits) -> dict[str, Any]:
    """Validate, drop unchanged items, queue the rest as one message. Shared with the importers."""
    batch = validate_batch(items, limits)
    await run_in_threadpool(_skip_unchanged, services, batch)
    await writes.store_many(batch.to_queue())
    accepted, unchanged, failed = batch.count(ACCEPTED), batch.count(UNCHANGED), batch.count(ERROR)
    return {
        "status": "success" if not failed else "partial_success",
        "accepted_count": accepted,
        "unchanged_count": unchanged,
        "failed_count": failed,
        "summary": f"{accepted + unchanged}/{len(items)} memories accepted ({unchanged} already stored unchanged)",
        "results": [item.result() for item in batch.items],
    }


@router.post(
    "/memory/batch", status_code=201,
    summary="Store up to 500 memories in one request (queued; 201 all accepted, 207 with per-item errors)",
)
async def store_batch(
    request: Request,
    services: Annotated[Services, Depends(get_services)],
    writes: Annotated[WritePath, Depends(get_writes)],
):
    settings = services.settings
    foreground = getattr(request.app.state, "foreground", None)
    if foreground is not None:
        # Parsing and validating 500 memories is ~30 ms of the event loop's GIL: a recall in
        # flight goes first (pipeline.foreground).
        await foreground.give_way_async()
    body = await read_json(request, settings.batch_max_request_bytes)
    items = extract_items(body, settings.batch_max_items)
    await writes.admit()
    payload = await ingest_batch(services, writes, items, get_limits(request))
    return ORJSONResponse(payload, status_code=201 if not payload["failed_count"] else 207)
