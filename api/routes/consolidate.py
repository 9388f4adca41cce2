"""POST /consolidate and GET /consolidate/status (AutoMem's consolidation API)."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, StrictBool

from api.auth import ApiAuth, check_admin_token
from api.body import read_model
from api.deps import get_services
from api.maintenance import launcher
from api.responses import ORJSONResponse
from pipeline.errors import NotFound
from pipeline.maintenance.cycles import CONSOLIDATION_MODES, registry
from pipeline.maintenance.schedule import cycle_intervals, last_runs
from pipeline.services import Services

router = APIRouter(dependencies=[ApiAuth], tags=["consolidation"])


class ConsolidateBody(BaseModel):
    model_config = ConfigDict(extra="ignore")

    mode: Literal["full", "decay", "creative", "cluster", "forget"] = "full"
    # AutoMem's default: a consolidation asked for without dry_run only reports.
    dry_run: StrictBool = True


DESTRUCTIVE_MODES = frozenset({"forget"})  # deletes memories; the other cycles only score, link or summarise


def check_destructive(request: Request, modes: list[str], dry_run: bool, settings) -> None:
    """A consolidation that deletes memories takes the admin token, unless forgetting is switched on.

    Forgetting is opt-in (CONSOLIDATION_FORGET_INTERVAL_SECONDS, 0 by default): where the
    operator has switched it on, an API client running it early does what the clock would do;
    where not, the API token alone must not be enough to delete memories.
    """
    if dry_run or not DESTRUCTIVE_MODES.intersection(modes):
        return
    if settings.consolidation_forget_interval_seconds > 0:
        return
    check_admin_token(request, settings, "consolidation with mode=forget and dry_run=false (it deletes memories; "
                                         "forgetting is off: CONSOLIDATION_FORGET_INTERVAL_SECONDS=0)")


def modes_for(mode: str, settings) -> list[str]:
    """``full`` runs every cycle, forget only where it is switched on (it is off by default)."""
    if mode != "full":
        return [mode]
    return [m for m in CONSOLIDATION_MODES if m != "forget" or settings.consolidation_forget_interval_seconds > 0]


@router.post("/consolidate", summary="Run consolidation now (dry_run reports what would change)")
async def consolidate(
    request: Request,
    services: Annotated[Services, Depends(get_services)],
    wait: Annotated[bool, Query(description="Wait (bounded by MAINTENANCE_RUN_WAIT_SECONDS) for the result.")] = True,
):
    settings = services.settings
    body = await read_model(request, ConsolidateBody, settings.max_request_bytes)
    modes = modes_for(body.mode, settings)
    check_destructive(request, modes, body.dry_run, settings)
    maintenance = launcher(services, request.app.state)
    run_ids = await maintenance.start(modes, body.dry_run)
    settled, views = await maintenance.wait(run_ids, settings.maintenance_run_wait_seconds if wait else 0)
    payload = {
        "status": "success",
        "consolidation": {"mode": body.mode, "dry_run": body.dry_run, "complete": settled, "runs": views},
    }
    return ORJSONResponse(payload, status_code=200 if settled else 202)


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).isoformat()


@router.get("/consolidate/status", summary="Next scheduled runs and the history of finished ones")
def consolidate_status(request: Request, services: Annotated[Services, Depends(get_services)]):
    settings = services.settings
    maintenance = launcher(services, request.app.state)
    last = last_runs(services.broker_redis)
    now = time.time()
    next_runs: dict[str, Any] = {}
    for kind, interval in cycle_intervals(settings).items():
        due = last[kind] + interval if kind in last else now
        next_runs[kind] = _iso(max(due, now))
    return ORJSONResponse(
        {
            "status": "success",
            "next_runs": next_runs,
            "intervals_seconds": cycle_intervals(settings),
            "last_scheduled": {kind: _iso(at) for kind, at in last.items()},
            "in_progress": maintenance.runs.in_progress(list(registry())),
            "history": maintenance.runs.history(),
        }
    )


@router.get("/consolidate/runs/{run_id}", summary="One maintenance run (consolidation, sync, re-embed)")
def consolidate_run(run_id: str, request: Request, services: Annotated[Services, Depends(get_services)]):
    view = launcher(services, request.app.state).runs.view(run_id)
    if view is None:
        raise NotFound(f"run {run_id} not found")
    return ORJSONResponse({"status": "success", "run": view})
