"""Sources in bulk and live: the Slack Events API endpoint and the admin Slack export import.

Neither writes a store: both map Slack messages to memory bodies and queue them through the
same write path as ``POST /memory/batch``.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Query, Request
from slack_sdk.signature import SignatureVerifier
from starlette.concurrency import run_in_threadpool

from api.auth import AdminAuth
from api.body import read_body
from api.deps import get_limits, get_services, get_writes
from api.responses import ORJSONResponse
from api.routes.batch import ingest_batch
from api.writes import WritePath
from pipeline.errors import NotFound, Overloaded, PayloadTooLarge, Unauthorized, ValidationError
from pipeline.records import build_new_record
from pipeline.services import Services
from pipeline.slack.directory import DirectoryCache
from pipeline.slack.events import Delete, Ignore, Store, ids_to_resolve, plan_event
from pipeline.slack.export import ExportTooLarge, SlackExport
from pipeline.slack.importer import BatchOutcome, import_export
from pipeline.slack.mapping import MappingRules

log = logging.getLogger(__name__)
router = APIRouter(tags=["ingest"])
EVENT_SEEN_PREFIX = "mempipe:slack:event:"
IMPORT_JOB_PREFIX = "mempipe:import:slack:"
IMPORT_JOB_TTL_S = 7 * 86_400


def _rules(services: Services) -> MappingRules:
    settings = services.settings
    return MappingRules(settings.slack_noise_subtypes, settings.memory_content_hard_limit)


# --- Events API -------------------------------------------------------------------------


def _signed_by_slack(secret: str | None, raw: bytes, request: Request) -> bool:
    """slack-sdk checks the HMAC and that the timestamp is within five minutes (replays)."""
    timestamp = request.headers.get("x-slack-request-timestamp", "")
    signature = request.headers.get("x-slack-signature", "")
    if not secret or not timestamp.isdigit() or not signature:
        return False
    return SignatureVerifier(secret).is_valid(raw, timestamp, signature)


@router.post("/ingest/slack/events", summary="Slack Events API receiver (signed by Slack; no API token)")
async def slack_events(
    request: Request,
    services: Annotated[Services, Depends(get_services)],
    writes: Annotated[WritePath, Depends(get_writes)],
):
    settings = services.settings
    raw = await read_body(request, settings.max_request_bytes)
    if not _signed_by_slack(settings.slack_signing_secret, raw, request):
        raise Unauthorized("invalid or stale Slack signature")
    try:
        payload = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise ValidationError("body: malformed JSON") from None
    if not isinstance(payload, dict):
        raise ValidationError("body: expected a JSON object")
    if payload.get("type") == "url_verification":
        return ORJSONResponse({"challenge": payload.get("challenge")})
    if payload.get("type") != "event_callback":
        return ORJSONResponse({"status": "ignored", "reason": f"type:{payload.get('type')}"})

    # Backpressure as on every write path: past the bound, 429 with Retry-After and nothing
    # claimed or queued, so Slack's own retry (it retries a non-2xx, with backoff) gets through
    # once the backlog has drained.
    await writes.admit()
    redis_client = services.broker_redis
    event_id = payload.get("event_id")
    seen_key = EVENT_SEEN_PREFIX + event_id if isinstance(event_id, str) and event_id else None
    if seen_key and await run_in_threadpool(redis_client.exists, seen_key):
        retry = request.headers.get("x-slack-retry-num")
        return ORJSONResponse({"status": "duplicate", "event_id": event_id, "retry": retry})
    answer = await _apply_event(payload, services, writes, get_limits(request))
    if seen_key:
        # Claimed only once the write is queued: a crash before this point leaves the event
        # unclaimed, so Slack's retry applies it. Two deliveries racing here both apply it,
        # which writes the same memory (ids come from the message) twice, harmlessly.
        await run_in_threadpool(redis_client.set, seen_key, 1, ex=settings.slack_event_dedupe_ttl_s)
    return ORJSONResponse(answer)


async def _apply_event(payload: dict[str, Any], services: Services, writes: WritePath, limits) -> dict[str, Any]:
    event = payload.get("event") if isinstance(payload.get("event"), dict) else {}
    team = payload.get("team_id") or event.get("team") or ""
    users, channel = ids_to_resolve(event)
    directory = await run_in_threadpool(DirectoryCache(services.broker_redis).lookup, str(team), users, channel)
    action = plan_event(payload, _rules(services), directory)
    if isinstance(action, Ignore):
        return {"status": "ignored", "reason": action.reason}
    if isinstance(action, Delete):
        await writes.delete(action.memory_id, wait=False)
        return {"status": "accepted", "action": "delete", "memory_id": action.memory_id}
    assert isinstance(action, Store)
    try:
        record = build_new_record(action.body, limits)
    except ValidationError as exc:  # answer 200 anyway: Slack would only retry the same thing
        log.warning("slack event %s not stored: %s", payload.get("event_id"), exc.message)
        return {"status": "ignored", "reason": exc.message}
    await writes.store_many([record])  # admitted above: just queue (Slack needs an answer within 3 s)
    return {"status": "accepted", "action": "store" if action.kind == "new" else "update", "memory_id": record.id}


# --- Admin export import ----------------------------------------------------------------


class _InProcessSink:
    """Runs in the import thread; each batch goes through the batch write path on the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, services: Services, writes: WritePath, limits):
        self._loop, self._services, self._writes, self._limits = loop, services, writes, limits

    def send(self, bodies: list[dict[str, Any]]) -> BatchOutcome:
        while True:  # honour backpressure as the HTTP importer does
            try:
                self._writes.check_capacity()
                break
            except Overloaded as exc:
                time.sleep(exc.retry_after)
        future = asyncio.run_coroutine_threadsafe(ingest_batch(self._services, self._writes, bodies, self._limits), self._loop)
        result = future.result()
        errors = [r["message"] for r in result["results"] if r["status"] == "error"]
        return BatchOutcome(result["accepted_count"], result["unchanged_count"], result["failed_count"], errors)


def _open_export(path: Path, settings) -> SlackExport:
    return SlackExport(path, settings.slack_export_max_member_bytes, settings.slack_export_max_total_bytes)


def _save_job(services: Services, job_id: str, state: dict[str, Any]) -> None:
    services.broker_redis.set(IMPORT_JOB_PREFIX + job_id, orjson.dumps(state), ex=IMPORT_JOB_TTL_S)


def _run_import(path: Path, job_id: str, sink: _InProcessSink, services: Services, workspace: str | None) -> dict[str, Any]:
    try:
        with _open_export(path, services.settings) as export:
            directory, _, team = export.directory()
            DirectoryCache(services.broker_redis).save(workspace or team or job_id, directory)
            summary = import_export(export, sink, _rules(services), batch_size=services.settings.slack_import_batch_size,
                                    workspace=workspace)
        state = {"job_id": job_id, "status": "done", "summary": summary.as_dict()}
    except Exception as exc:
        log.exception("slack import %s failed", job_id)
        state = {"job_id": job_id, "status": "failed", "error": f"{type(exc).__name__}: {exc}"[:500]}
    finally:
        path.unlink(missing_ok=True)
    _save_job(services, job_id, state)
    return state


SLACK_IMPORT_PATH = "/admin/import/slack"
# The body is the export file itself; api.guard refuses any other declared type.
SLACK_UPLOAD_TYPES = frozenset({"application/zip", "application/x-zip-compressed", "application/octet-stream"})


@router.post(SLACK_IMPORT_PATH, dependencies=[AdminAuth], summary="Import an uploaded Slack export .zip (body: the zip)")
async def import_slack_export(
    request: Request,
    services: Annotated[Services, Depends(get_services)],
    writes: Annotated[WritePath, Depends(get_writes)],
    wait: Annotated[bool, Query(description="Answer with the summary when done instead of a job id at once.")] = False,
    workspace: Annotated[str | None, Query(description="Workspace id for memory ids (default: the export's team id).")] = None,
):
    settings = services.settings
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > settings.slack_max_upload_bytes:
        raise PayloadTooLarge(f"body: {declared} bytes exceeds the limit of {settings.slack_max_upload_bytes}")
    handle = tempfile.NamedTemporaryFile(prefix="slack-export-", suffix=".zip", delete=False)
    path, size = Path(handle.name), 0
    try:
        with handle:  # streamed to disk: the upload is never held in memory
            async for chunk in request.stream():
                size += len(chunk)
                if size > settings.slack_max_upload_bytes:
                    raise PayloadTooLarge(f"body: exceeds the limit of {settings.slack_max_upload_bytes} bytes")
                await run_in_threadpool(handle.write, chunk)
        if size == 0:
            raise ValidationError("body: expected a Slack export .zip")
        try:
            _open_export(path, settings).close()
        except ExportTooLarge as exc:
            raise PayloadTooLarge(f"body: {exc}") from None
        except Exception:
            raise ValidationError("body: not a readable .zip (send the export file as the request body)") from None
    except Exception:
        path.unlink(missing_ok=True)
        raise
    await writes.admit()
    job_id = uuid.uuid4().hex
    sink = _InProcessSink(asyncio.get_running_loop(), services, writes, get_limits(request))
    await run_in_threadpool(_save_job, services, job_id, {"job_id": job_id, "status": "running"})
    if wait:
        state = await run_in_threadpool(_run_import, path, job_id, sink, services, workspace)
        return ORJSONResponse(state, status_code=200 if state["status"] == "done" else 422)
    threading.Thread(target=_run_import, args=(path, job_id, sink, services, workspace), name=f"slack-import-{job_id[:8]}",
                     daemon=True).start()
    return ORJSONResponse({"job_id": job_id, "status": "running", "status_url": f"/admin/import/slack/{job_id}"}, status_code=202)


@router.get("/admin/import/slack/{job_id}", dependencies=[AdminAuth], summary="Progress and summary of an import job")
def import_status(job_id: str, services: Annotated[Services, Depends(get_services)]):
    raw = services.broker_redis.get(IMPORT_JOB_PREFIX + job_id)
    if raw is None:
        raise NotFound(f"import job {job_id} not found")
    return ORJSONResponse(orjson.loads(raw))
