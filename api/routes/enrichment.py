"""GET /enrichment/status and POST /enrichment/reprocess."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from api.auth import ApiAuth
from api.body import read_json
from api.deps import get_services, get_writes, graph_call
from api.responses import ORJSONResponse
from api.routes.recall import list_param
from api.writes import WritePath
from pipeline.broker import NAMESPACE, held_messages_key
from pipeline.stages import ENRICH_QUEUE
from pipeline.relationships import existing_ids
from pipeline.errors import ValidationError
from pipeline.services import Services

router = APIRouter(dependencies=[ApiAuth], tags=["enrichment"])

MAX_REPROCESS_IDS = 1000


def _queue_figures(services: Services) -> dict[str, int]:
    pipe = services.broker_redis.pipeline(transaction=False)
    pipe.hlen(held_messages_key(ENRICH_QUEUE))  # waiting or being worked on
    pipe.hlen(held_messages_key(f"{ENRICH_QUEUE}.DQ"))  # waiting to be retried
    pipe.zcard(f"{NAMESPACE}:{ENRICH_QUEUE}.XQ")  # dead-lettered
    ready, delayed, dead = pipe.execute()
    return {"queue_size": int(ready) + int(delayed), "retrying": int(delayed), "dead_letters": int(dead)}


@router.get("/enrichment/status", summary="Enrichment queue, progress and LLM-classification counters")
def enrichment_status(services: Annotated[Services, Depends(get_services)]):
    s = services.settings
    queue = _queue_figures(services)
    snapshot = services.enrichment_stats.snapshot()
    body: dict[str, Any] = {
        "status": "success",
        "enabled": s.enrichment_enabled,
        "queue_size": queue["queue_size"],
        "inflight": snapshot["inflight"],
        "pending": snapshot["pending"],
        "stats": {**snapshot["stats"], "retrying": queue["retrying"], "dead_letters": queue["dead_letters"]},
        "classification": snapshot["classification"],
        "config": {
            "classifier": "llm" if s.classification_model else "pattern",
            "classification_model": s.classification_model,
            "summaries": "llm" if s.resolved_summary_model else "extractive",
            "entity_extractor": s.entity_extractor,
            "similar_to_threshold": s.similar_to_threshold,
            "similar_to_limit": s.similar_to_limit,
        },
    }
    return ORJSONResponse(body)


async def _requested_ids(request: Request, max_bytes: int) -> list[str]:
    ids = list_param(request, "ids")
    if not ids and request.headers.get("content-length", "0") not in ("", "0"):
        body = await read_json(request, max_bytes)
        raw = body.get("ids") if isinstance(body, dict) else None
        if not isinstance(raw, list) or not all(isinstance(i, str) and i.strip() for i in raw):
            raise ValidationError("ids: expected a list of memory ids")
        ids = list(dict.fromkeys(i.strip() for i in raw))
    if not ids:
        raise ValidationError("ids: give memory ids in the body ({\"ids\": [...]}) or as ?ids=a,b")
    if len(ids) > MAX_REPROCESS_IDS:
        raise ValidationError(f"ids: {len(ids)} ids exceeds the limit of {MAX_REPROCESS_IDS}")
    return ids


@router.post("/enrichment/reprocess", status_code=202, summary="Re-queue memories for enrichment")
async def enrichment_reprocess(
    request: Request,
    services: Annotated[Services, Depends(get_services)],
    writes: Annotated[WritePath, Depends(get_writes)],
):
    ids = await _requested_ids(request, services.settings.max_request_bytes)
    found = await run_in_threadpool(graph_call, lambda: existing_ids(services.graph, ids))
    queued = [i for i in ids if i in found]
    if queued:
        await writes.reprocess(queued)
    body: dict[str, Any] = {"status": "queued", "count": len(queued), "ids": queued}
    missing = [i for i in ids if i not in found]
    if missing:
        body["not_found"] = missing
    return ORJSONResponse(body, status_code=202)
