"""Starting maintenance runs from the API and waiting, bounded, for their results.

The API never touches the stores for maintenance: it records the run in Redis, enqueues
``start_cycle``, and polls the run record until it settles or the wait bound passes (then
it answers 202 with the run ids, which GET /consolidate/runs/{id} reports on later).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable

from starlette.concurrency import run_in_threadpool

from pipeline.errors import Conflict
from pipeline.maintenance.runs import FINISHED, new_run_id, run_store
from pipeline.services import Services

POLL_SECONDS = 0.1


def _default_send(kind: str, dry_run: bool, trigger: str, run_id: str, params: dict[str, Any]) -> None:
    import pipeline.actors  # noqa: F401  (installs the broker and declares the actors the map sends to)
    from pipeline import stages

    stages.send("start_cycle", kind, dry_run, trigger, run_id, params)


class MaintenanceLauncher:
    def __init__(self, services: Services, send: Callable[..., None] = _default_send):
        self._services = services
        self._send = send
        self.runs = run_store(services)

    def _start_sync(self, kinds: list[str], dry_run: bool, params: dict[str, Any]) -> dict[str, str]:
        # Refused here, before anything is queued: a caller repeating a request while its run
        # goes must not pile up runs (each would walk the whole store), dry or not.
        for kind in kinds:
            if holder := self.runs.holder(kind, dry_run):
                # A scheduled run held back for a busy pipeline goes on now: it is what was asked for.
                self.runs.release_hold(holder)
                raise Conflict(f"a {'dry ' if dry_run else ''}{kind} run is already in progress "
                               f"(run {holder}, GET /consolidate/runs/{holder}); retry when it has finished")
        ids = {}
        for kind in kinds:
            run_id = new_run_id()
            self.runs.create(run_id, kind, dry_run, "api", params)
            self._send(kind, dry_run, "api", run_id, params)
            ids[kind] = run_id
        return ids

    async def start(self, kinds: list[str], dry_run: bool, params: dict[str, Any] | None = None) -> dict[str, str]:
        return await run_in_threadpool(self._start_sync, kinds, dry_run, params or {})

    async def wait(self, run_ids: dict[str, str], seconds: float) -> tuple[bool, dict[str, dict[str, Any]]]:
        """(all settled, each run's view) after at most ``seconds``."""
        deadline = time.monotonic() + seconds
        while True:
            views = await run_in_threadpool(lambda: {k: self.runs.view(i) for k, i in run_ids.items()})
            settled = all(v is not None and v["status"] in FINISHED for v in views.values())
            if settled or time.monotonic() >= deadline:
                return settled, {k: v for k, v in views.items() if v is not None}
            await asyncio.sleep(POLL_SECONDS)


def launcher(services: Services, state: Any) -> MaintenanceLauncher:
    """The app's launcher (tests may set ``app.state.maintenance``), built on first use."""
    existing = getattr(state, "maintenance", None)
    if existing is None:
        existing = state.maintenance = MaintenanceLauncher(services)
    return existing
