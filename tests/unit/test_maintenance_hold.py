"""A scheduled maintenance run waits while the pipeline is busy; requests are never held."""

from dataclasses import replace
from types import SimpleNamespace

import fakeredis
import pytest

from api.maintenance import MaintenanceLauncher
from pipeline.actors.consolidate import hold_back
from pipeline.background import pipeline_busy
from pipeline.errors import Conflict
from pipeline.maintenance.runs import RunStore


def services(*, arriving=False, inflight=0, held=None, bound=1800.0):
    client = fakeredis.FakeRedis()
    for key, size in (held or {}).items():
        client.hset(key, mapping={f"m{i}": "{}" for i in range(size)})
    tracker = SimpleNamespace(writes_arriving=lambda: arriving, inflight_count=lambda: inflight)
    return SimpleNamespace(tracker=tracker, broker_redis=client,
                           settings=SimpleNamespace(maintenance_hold_max_s=bound, maintenance_history_size=10,
                                                    maintenance_run_ttl_hours=6.0))


def test_busy_means_writes_on_their_way_or_background_work_queued():
    assert not pipeline_busy(services())
    assert pipeline_busy(services(arriving=True))
    assert pipeline_busy(services(inflight=1))
    assert pipeline_busy(services(held={"mempipe:enrich.msgs": 1}))
    assert pipeline_busy(services(held={"mempipe:similarity.msgs": 3}))
    # The vector queue holds maintenance's own steps and the patches they send: not counted.
    assert not pipeline_busy(services(held={"mempipe:vectors.msgs": 4, "mempipe:maintenance.msgs": 2}))


def _run(svc, trigger: str, kind: str = "sync", run_id: str = "r1"):
    runs = RunStore.from_settings(svc.broker_redis, svc.settings)
    runs.create(run_id, kind, False, trigger)
    run = runs.get(run_id)
    assert runs.start(run)
    return runs, runs.get(run_id)


def test_only_a_scheduled_run_is_held_and_only_up_to_its_bound():
    busy = services(inflight=5, bound=60)
    _, scheduled = _run(busy, "clock")
    assert hold_back(busy, scheduled, scheduled.started_at + 1)
    assert hold_back(busy, scheduled, scheduled.started_at + 59)
    assert not hold_back(busy, scheduled, scheduled.started_at + 60)  # then it runs beside the pipeline
    _, requested = _run(services(inflight=5, bound=60), "api")
    assert not hold_back(busy, requested, requested.started_at + 1)

    idle = services(bound=60)
    _, scheduled = _run(idle, "clock")
    assert not hold_back(idle, scheduled, scheduled.started_at + 1)
    off = services(inflight=5, bound=0)
    _, scheduled = _run(off, "clock")
    assert not hold_back(off, scheduled, scheduled.started_at + 1)


def test_a_request_for_the_cycle_releases_a_held_run_and_is_told_it_is_running():
    svc = services(inflight=5)
    runs, scheduled = _run(svc, "clock")
    runs.add_held("r1", 5.0)
    runs.add_held("r1", 5.0)
    assert hold_back(svc, scheduled, scheduled.started_at + 1)
    launcher = MaintenanceLauncher(svc, send=lambda *args: pytest.fail("no second run is queued"))
    with pytest.raises(Conflict, match="run r1"):
        launcher._start_sync(["sync"], False, {})
    released = runs.get("r1")
    assert released.hold_released and not hold_back(svc, released, released.started_at + 1)
    assert runs.view("r1")["held_s"] == 10.0


def test_scheduled_runs_go_one_at_a_time_in_the_order_they_started():
    idle = services()
    runs, decay = _run(idle, "clock", kind="decay", run_id="a-decay")
    _, cluster = _run(idle, "clock", kind="cluster", run_id="b-cluster")
    _, forget = _run(idle, "clock", kind="forget", run_id="c-forget")
    cluster = replace(cluster, started_at=decay.started_at)  # one tick: the tie goes by run id
    now = forget.started_at + 1
    assert not hold_back(idle, decay, now)
    assert hold_back(idle, cluster, now) and hold_back(idle, forget, now)
    runs.finish(decay)
    assert not hold_back(idle, cluster, now) and hold_back(idle, forget, now)
    runs.finish(cluster)
    assert not hold_back(idle, forget, now)


def test_a_run_ahead_holds_a_scheduled_run_only_within_its_bound_and_never_a_request():
    idle = services(bound=60)
    _, sync = _run(idle, "api", kind="sync", run_id="a-sync")  # a request's run, started first
    _, decay = _run(idle, "clock", kind="decay", run_id="b-decay")
    _, creative = _run(idle, "api", kind="creative", run_id="c-creative")
    assert hold_back(idle, decay, decay.started_at + 1)
    assert not hold_back(idle, decay, decay.started_at + 60)
    assert not hold_back(idle, creative, creative.started_at + 1)
