"""Operator routes (X-Admin-Token): drift repair, re-embedding, backups, dead letters."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import FileResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from api.auth import AdminAuth, _matches, check_api_token
from api.body import read_model
from api.deps import get_services, get_settings_dep
from api.maintenance import launcher
from api.responses import ORJSONResponse
from pipeline import deadletters
from pipeline.backup import parse_include, write_backup
from pipeline.stages import ALL_QUEUES
from pipeline.config import Settings
from pipeline.errors import Forbidden, NotFound, ValidationError
from pipeline.maintenance.quarantine import Quarantine
from pipeline.maintenance.runs import REFUSED
from pipeline.maintenance.sync import DRIFT_KINDS
from pipeline.services import Services

router = APIRouter(tags=["admin"])
Queue = Literal["persist", "embed", "vectors", "enrich", "maintenance"]
RunWaitParam = Annotated[bool, Query(description="Wait (bounded by MAINTENANCE_RUN_WAIT_SECONDS) for the result; "
                                                 "else 202 with the run id at once.")]
QueueParam = Annotated[Queue | None, Query(description="Only this stage's dead letters (default: every queue).")]


class SyncBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    dry_run: StrictBool = False


class ReembedBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    batch_size: StrictInt = Field(32, ge=1, le=2048)
    limit: StrictInt | None = Field(None, ge=1)
    force: StrictBool = False


class DeadLetterSelection(BaseModel):
    model_config = ConfigDict(extra="ignore")
    queue: Queue | None = None
    ids: list[str] | None = None


def drift_report(view: dict[str, Any]) -> dict[str, Any]:
    counts, samples = view.get("counts") or {}, view.get("samples") or {}
    return {kind: {"count": counts.get(kind, 0), "sample_ids": samples.get(kind, [])} for kind in DRIFT_KINDS}


@dataclass(frozen=True)
class SyncRun:
    """One sync or recover run started for a request, and as far as the wait saw it."""

    dry_run: bool
    run_id: str
    settled: bool
    view: dict[str, Any]

    def payload(self, kind: str, **fields: Any) -> dict[str, Any]:
        return {"status": "success", "dry_run": self.dry_run, "complete": self.settled, "run_id": self.run_id,
                **fields, kind: self.view}

    @property
    def status_code(self) -> int:
        return 200 if self.settled else 202


async def start_sync_run(request: Request, services: Services, kind: str, wait: bool) -> SyncRun:
    """Read the body (``dry_run``), start one ``kind`` run, and wait for it, bounded unless ``wait`` is off."""
    settings = services.settings
    body = await read_model(request, SyncBody, settings.max_request_bytes)
    maintenance = launcher(services, request.app.state)
    run_ids = await maintenance.start([kind], body.dry_run)
    settled, views = await maintenance.wait(run_ids, settings.maintenance_run_wait_seconds if wait else 0)
    view = views.get(kind, {"run_id": run_ids[kind], "status": "queued"})
    return SyncRun(body.dry_run, run_ids[kind], settled, view)


@router.post("/admin/sync", dependencies=[AdminAuth], summary="Repair drift between graph and vectors (dry_run: report it)")
async def admin_sync(request: Request, services: Annotated[Services, Depends(get_services)], wait: RunWaitParam = True):
    run = await start_sync_run(request, services, "sync", wait)
    payload = run.payload("sync", drift=drift_report(run.view))
    if run.view.get("status") == REFUSED:  # the sync guard: nothing was deleted or repaired
        payload.update(status=REFUSED, reason=run.view.get("reason"))
    return ORJSONResponse(payload, status_code=run.status_code)


@router.post("/admin/sync/recover", dependencies=[AdminAuth],
             summary="Rebuild memories missing from the graph from vector payloads and the sync quarantine")
async def admin_sync_recover(request: Request, services: Annotated[Services, Depends(get_services)], wait: RunWaitParam = True):
    """After a wiped or wrong graph (the sync guard refused), or to undo what sync quarantined.

    Creates only nodes that are missing (never overwrites one), re-embeds quarantined points,
    and clears the sync guard when a real run finishes. ``dry_run`` counts what it would restore.
    """
    run = await start_sync_run(request, services, "recover", wait)
    counts = run.view.get("counts") or {}
    payload = run.payload("recover", restored_from_vectors=counts.get("restored_from_vectors", 0),
                          restored_from_quarantine=counts.get("restored_from_quarantine", 0))
    return ORJSONResponse(payload, status_code=run.status_code)


@router.get("/admin/sync/quarantine", dependencies=[AdminAuth],
            summary="Vector points sync quarantined before deleting them (what recover would restore)")
def admin_sync_quarantine(
    services: Annotated[Services, Depends(get_services)],
    limit: Annotated[int, Query(ge=1, le=1000, description="Entries per page.")] = 100,
    after: Annotated[str | None, Query(max_length=512, description="The last memory id of the previous page.")] = None,
):
    quarantine = Quarantine(services.broker_redis)
    entries = quarantine.page(after, limit)
    listed = [{
        "memory_id": memory_id,
        "reason": entry.get("reason"),
        "run_id": entry.get("run_id"),
        "quarantined_at": datetime.fromtimestamp(entry.get("at") or 0, tz=timezone.utc).isoformat(),
        "content": (entry.get("payload") or {}).get("content"),
        "tags": (entry.get("payload") or {}).get("tags") or [],
    } for memory_id, entry in entries]
    return ORJSONResponse({
        "status": "success",
        "count": quarantine.count(),
        "entries": listed,
        "next_after": entries[-1][0] if len(entries) == limit else None,
    })


@router.post("/admin/reembed", dependencies=[AdminAuth], summary="Re-embed memories through the embed queue")
async def admin_reembed(request: Request, services: Annotated[Services, Depends(get_services)], wait: RunWaitParam = True):
    """In place at the same dimension; into a new collection, switched to when complete, at a new one."""
    settings = services.settings
    body = await read_model(request, ReembedBody, settings.max_request_bytes)
    migrating = await run_in_threadpool(services.collections.migration_needed)
    if migrating and body.limit is not None:
        raise ValidationError("limit: a dimension change migrates every memory (the new collection goes live only when complete)")
    kind = "migrate" if migrating else "reembed"
    maintenance = launcher(services, request.app.state)
    run_ids = await maintenance.start([kind], False, body.model_dump())
    settled, views = await maintenance.wait(run_ids, settings.maintenance_run_wait_seconds if wait else 0)
    view = views.get(kind, {})
    counts = view.get("counts") or {}
    payload: dict[str, Any] = {
        "status": "complete" if settled and view.get("status") == "complete" else view.get("status", "queued"),
        "processed": counts.get("processed", 0),
        "failed": 1 if view.get("status") == "failed" else 0,
        "run_id": run_ids[kind],
    }
    if migrating:
        payload["migration"] = await run_in_threadpool(services.collections.describe)
        payload["note"] = ("a dimension change: every memory is embedded into a new collection through the embed "
                           "queue; recall keeps using the old one until the new one is complete, then switches")
    else:
        payload["scanned"] = counts.get("scanned", 0)
        payload["note"] = "processed memories were queued for embedding; their vectors land as the embed queue drains"
    return ORJSONResponse(payload, status_code=200 if settled else 202)


async def require_admin_only(request: Request, settings: Annotated[Settings, Depends(get_settings_dep)]) -> None:
    """GET /backup takes the admin token by itself (X-Admin-Token or X-Admin-Api-Key), as AutoMem does.

    No valid credential at all is 401; a valid API token without the admin token is 403.
    """
    expected = settings.admin_api_token
    presented = request.headers.get("x-admin-token") or request.headers.get("x-admin-api-key")
    if expected and _matches(presented, expected):
        return
    check_api_token(request, settings)  # 401 unless at least the API token is right
    if not expected:
        raise Forbidden("admin routes are disabled: ADMIN_API_TOKEN is not set")
    raise Forbidden("admin token required (X-Admin-Token)")


@router.get("/backup", dependencies=[Depends(require_admin_only)], summary="Download a backup (.tar.gz)")
async def backup(
    services: Annotated[Services, Depends(get_services)],
    include: Annotated[str | None, Query(description="falkordb,qdrant (default both)")] = None,
):
    parts = parse_include(include)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    scratch = Path(tempfile.mkdtemp(prefix="mempipe-backup-"))
    archive = scratch / f"automem-backup-{stamp}.tar.gz"

    def build() -> None:
        write_backup(archive, services.graph, services.vectors if "qdrant" in parts else None, parts)

    try:
        await run_in_threadpool(build)
    except Exception:
        _remove(scratch)
        raise
    return FileResponse(archive, media_type="application/gzip", filename=archive.name,
                        background=BackgroundTask(_remove, scratch))


def _remove(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _broker():
    import pipeline.actors

    return pipeline.actors.broker


def _queues(queue: str | None) -> tuple[str, ...]:
    return (queue,) if queue else ALL_QUEUES


@router.get("/admin/deadletters", dependencies=[AdminAuth], summary="Messages that exhausted their retries")
def list_dead_letters(queue: QueueParam = None,
                      limit: Annotated[int, Query(ge=1, le=1000, description="Most dead letters listed (count is all of them).")] = 100):
    found = [d.summary() for d in deadletters.dead_messages(_broker(), _queues(queue))]
    return ORJSONResponse({"status": "success", "count": len(found), "dead_letters": found[:limit]})


@router.get("/admin/deadletters/{queue}/{message_id}", dependencies=[AdminAuth], summary="One dead message in full")
def show_dead_letter(queue: Queue, message_id: str):
    found = deadletters.inspect(_broker(), queue, message_id)
    if found is None:
        raise NotFound(f"no dead message {message_id} in queue {queue}")
    return ORJSONResponse({"status": "success", "dead_letter": found})


@router.post("/admin/deadletters/replay", dependencies=[AdminAuth], summary="Re-enqueue dead messages")
async def replay_dead_letters(request: Request, services: Annotated[Services, Depends(get_services)]):
    selection = await read_model(request, DeadLetterSelection, services.settings.max_request_bytes)
    ids = set(selection.ids) if selection.ids is not None else None
    count = await run_in_threadpool(deadletters.replay, _broker(), _queues(selection.queue), ids)
    return ORJSONResponse({"status": "success", "replayed": count})


@router.delete("/admin/deadletters", dependencies=[AdminAuth], summary="Delete dead messages for good")
def purge_dead_letters(queue: QueueParam = None,
                       ids: Annotated[list[str] | None, Query(description="Only these message ids (repeat the parameter); default: all of them.")] = None):
    count = deadletters.purge(_broker(), _queues(queue), set(ids) if ids else None)
    return ORJSONResponse({"status": "success", "purged": count})
