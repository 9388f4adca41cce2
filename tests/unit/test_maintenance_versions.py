"""A maintenance run started by one version is not stepped by a version whose cycle has other
phases: a step message names its phase by number, so after an upgrade in the middle of a run
that number could name another phase (issue 21: the cluster cycle's phases changed)."""

from types import SimpleNamespace

import fakeredis
import pytest

from pipeline.actors import consolidate
from pipeline.maintenance.runs import FAILED, RUNNING, RunStore, lock_key


@pytest.fixture
def svc(monkeypatch):
    services = SimpleNamespace(broker_redis=fakeredis.FakeRedis(),
                               settings=SimpleNamespace(maintenance_history_size=10, maintenance_run_ttl_hours=6.0,
                                                        maintenance_hold_max_s=0))
    monkeypatch.setattr(consolidate, "services", lambda: services)
    return services


def started(svc, kind: str, run_id: str = "r1", phases: list[str] | None = None) -> RunStore:
    runs = RunStore.from_settings(svc.broker_redis, svc.settings)
    runs.create(run_id, kind, False, "api")
    assert runs.start(runs.get(run_id))
    if phases is not None:
        runs.pin_phases(run_id, phases)
    return runs


def test_a_started_run_records_the_phases_its_steps_are_numbered_by(svc, monkeypatch):
    sent = []
    monkeypatch.setattr(consolidate, "_dispatch", lambda runs, run, phase, seq, cursor, delay_s=0.0: sent.append((run.id, phase)))
    consolidate.start_cycle.fn("cluster", trigger="api", run_id="r1")
    runs = RunStore.from_settings(svc.broker_redis, svc.settings)
    assert runs.get("r1").phases == ("sample", "fit", "assign", "write", "retire")
    assert sent == [("r1", 0)]
    runs.pin_phases("r1", ["other"])  # a redelivered start keeps the first record
    assert runs.get("r1").phases == ("sample", "fit", "assign", "write", "retire")


def test_a_run_with_the_same_phases_or_none_recorded_goes_on(svc):
    runs = started(svc, "cluster", "same", consolidate.phase_names("cluster"))
    assert consolidate.steps_changed(runs.get("same")) is None
    runs = started(svc, "decay", "older")  # started before the phases were recorded
    assert runs.get("older").phases is None
    assert consolidate.steps_changed(runs.get("older")) is None


def test_a_step_of_a_run_started_with_other_phases_fails_the_run_without_running(svc, monkeypatch):
    monkeypatch.setattr(consolidate, "_dispatch", lambda *args, **kwargs: pytest.fail("nothing more is sent"))
    runs = started(svc, "cluster", phases=["fit", "write", "retire"])  # an older version's cycle
    assert runs.get("r1").status == RUNNING
    consolidate.maintenance_step.fn("r1", 1, 0, None)
    view = runs.view("r1")
    assert view["status"] == FAILED
    assert "fit, write, retire" in view["reason"] and "sample, fit, assign, write, retire" in view["reason"]
    assert view["counts"] == {}  # no step ran, so none recorded
    assert runs.holder("cluster", False) is None  # the lock is free for the next run
    assert not svc.broker_redis.exists(lock_key("cluster", False))


def test_a_step_of_a_cycle_this_version_does_not_have_fails_the_run(svc, monkeypatch):
    monkeypatch.setattr(consolidate, "_dispatch", lambda *args, **kwargs: pytest.fail("nothing more is sent"))
    runs = started(svc, "retired-cycle", phases=["walk"])
    consolidate.maintenance_step.fn("r1", 0, 0, None)
    view = runs.view("r1")
    assert view["status"] == FAILED and "no retired-cycle cycle" in view["reason"]
