"""Maintenance actors: start a cycle, run its steps, apply the vector changes it asks for.

A run is a chain of step messages (see pipeline.maintenance.cycles): graph steps on the
``maintenance`` queue, vector steps on the ``vectors`` queue (the Edge shard's owner), one
page each. Each step sends the next, so nothing holds a whole store in memory and a
redelivered step redoes one page — idempotently — rather than the run.

A scheduled run's step is held back while the pipeline is busy, or while another cycle's run
that started before it is still going (``hold_back``): it is sent again after ``HOLD_POLL_S``
instead of running, up to ``MAINTENANCE_HOLD_MAX_S`` from the run's start, or until a request
for the same cycle releases it (``api.maintenance``). Held this way,
not by sleeping in the actor, it keeps no consumer thread: a vector step waiting in the web
would stand between the write path's vector messages and the shard.
"""

from __future__ import annotations

import time
from typing import Any

from pipeline.actor_context import services
from pipeline.background import pipeline_busy
from pipeline.maintenance.cycles import VECTORS, RunContext, registry
from pipeline.maintenance.migrate import abandon
from pipeline.maintenance.runs import COMPLETE, FAILED, FINISHED, REFUSED, SKIPPED, Run, RunStore, new_run_id, run_store
from pipeline.resilience import store_call
from pipeline.services import Services
from pipeline.stages import EmbedItem, VectorItem, send_drop_vectors, send_embed, send_patch_payloads, send_vectors, stage_actor


class ActorOutbox:
    """What a step's vector-side effects become: messages on the stage queues."""

    def __init__(self, svc: Services):
        self._embed_batch_size = svc.settings.embed_batch_size
        self._by_length = svc.settings.embed_group_by_length

    def patch_payloads(self, payloads: dict[str, dict[str, Any]]) -> None:
        send_patch_payloads(payloads)

    def drop_vectors(self, memory_ids: list[str]) -> None:
        send_drop_vectors(memory_ids)

    def embed(self, items: list[EmbedItem]) -> None:
        send_embed(items, self._embed_batch_size, by_length=self._by_length)

    def index(self, items: list[VectorItem]) -> None:
        send_vectors(items)


def _dispatch(runs: RunStore, run: Run, phase: int, seq: int, cursor: Any, delay_s: float = 0.0) -> None:
    phases = registry()[run.kind]
    if phase >= len(phases):
        runs.finish(run, COMPLETE)
        return
    actor = vector_step if phases[phase].where == VECTORS else maintenance_step
    options = {"delay": int(delay_s * 1000)} if delay_s > 0 else {}
    actor.send_with_options(args=(run.id, phase, seq, cursor), on_retry_exhausted=mark_run_failed.actor_name, **options)


HOLD_POLL_S = 5.0  # how often a held step looks at the pipeline again


def hold_back(svc: Services, run: Run, now: float) -> bool:
    """Should this step of ``run`` wait? Only a scheduled run's, only up to MAINTENANCE_HOLD_MAX_S
    from its start, and only while writes or background work are on their way or a run that
    started before it is going: the clock enqueues every overdue cycle at once, and one after
    another, in the order they started, recall shares the cores with one of them at a time
    rather than with all of them."""
    bound = svc.settings.maintenance_hold_max_s
    if run.trigger != "clock" or run.hold_released or bound <= 0 or now - run.started_at >= bound:
        return False
    return pipeline_busy(svc) or bool(run_store(svc).started_before(run, list(registry())))


def phase_names(kind: str) -> list[str] | None:
    """The names of a cycle's phases in this version (None: no such cycle here)."""
    phases = registry().get(kind)
    return [p.name for p in phases] if phases is not None else None


def steps_changed(run: Run) -> str | None:
    """Why this version cannot go on with ``run``, if it cannot: a step message names its phase
    by number, so a run started by a version whose cycle had other phases (an upgrade in the
    middle of the run) would have its next step run the wrong phase."""
    here = phase_names(run.kind)
    if here is None:
        return f"this version has no {run.kind} cycle"
    if run.phases is not None and list(run.phases) != here:
        return (f"the run was started by a version whose {run.kind} cycle has other phases "
                f"({', '.join(run.phases)}; here: {', '.join(here)}); start a new run")
    return None


def fail_run(runs: RunStore, run: Run, reason: str) -> None:
    """Settle ``run`` as failed; a failed migration is abandoned (its target collection dropped)."""
    runs.finish(run, FAILED, reason[:500])
    if run.kind == "migrate":
        abandon_migration.send(run.id)


def _run_step(run_id: str, phase: int, seq: int, cursor: Any) -> None:
    svc = services()
    runs = run_store(svc)
    run = runs.get(run_id)
    if run is None or run.status in FINISHED:
        return  # a duplicate of a step whose run is already settled
    if changed := steps_changed(run):
        fail_run(runs, run, changed)
        return
    if hold_back(svc, run, time.time()):
        runs.add_held(run_id, HOLD_POLL_S)
        _dispatch(runs, run, phase, seq, cursor, HOLD_POLL_S)
        return
    result = registry()[run.kind][phase].step(RunContext(svc, runs, run, ActorOutbox(svc)), cursor)
    runs.record_step(run_id, phase, seq, result.counts, result.samples)
    if result.refused:
        runs.finish(run, REFUSED, result.refused)
    elif result.cursor is not None:
        _dispatch(runs, run, phase, seq + 1, result.cursor, result.delay_s)
    else:
        _dispatch(runs, run, phase + 1, 0, None, result.delay_s)


@stage_actor("start_cycle")
def start_cycle(kind: str, dry_run: bool = False, trigger: str = "clock", run_id: str | None = None,
                params: dict[str, Any] | None = None) -> None:
    """Begin a run of one cycle (decay, creative, cluster, forget, sync, reembed)."""
    if kind not in registry():
        raise ValueError(f"unknown maintenance cycle {kind!r}")
    runs = run_store(services())
    run_id = run_id or new_run_id()
    runs.create(run_id, kind, dry_run, trigger, params)
    run = runs.get(run_id)
    if run is None or run.status in FINISHED:
        return
    if not runs.start(run):
        runs.finish(run, SKIPPED, f"another {kind} run is in progress")
        return
    runs.pin_phases(run_id, phase_names(kind))
    _dispatch(runs, run, 0, 0, None)


@stage_actor("maintenance_step")
def maintenance_step(run_id: str, phase: int, seq: int, cursor: Any) -> None:
    _run_step(run_id, phase, seq, cursor)


@stage_actor("vector_step")
def vector_step(run_id: str, phase: int, seq: int, cursor: Any) -> None:
    # With Edge this runs in the web: a page of a whole-store walk (sync, a re-embed) is tens
    # of milliseconds of the GIL, so it starts when no recall is in flight.
    services().give_way()
    _run_step(run_id, phase, seq, cursor)


@stage_actor("mark_run_failed")
def mark_run_failed(message: dict[str, Any], retries: dict[str, Any]) -> None:
    """A step exhausted its retries (it is in the dead-letter queue): settle the run as failed.

    Replaying that dead letter later finds the run settled and does nothing; start a new run.
    """
    runs = run_store(services())
    run = runs.get(message["args"][0])
    if run is not None and run.status not in FINISHED:
        error = (message.get("options", {}).get("traceback") or "").strip().splitlines()[-1:] or ["unknown error"]
        fail_run(runs, run, f"step {message['args'][1]}:{message['args'][2]} failed after {retries.get('retries')} retries: {error[0]}")


@stage_actor("abandon_migration")
def abandon_migration(run_id: str) -> None:
    """On the vectors queue: in the embedded default only the Edge shards' owner may drop one."""
    abandon(services(), run_id)


@stage_actor("apply_payload_patches")
def apply_payload_patches(payloads: dict[str, dict[str, Any]]) -> None:
    """Merge fields into existing points' payloads; a point that is missing is drift, left to sync."""
    vectors = services().vectors
    present = store_call(vectors.retrieve)(list(payloads))
    store_call(vectors.set_payloads)({m: p for m, p in payloads.items() if m in present})
