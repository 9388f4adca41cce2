"""Consolidation that deletes memories takes the admin token; no cycle runs twice at once, dry or not."""

from __future__ import annotations

from types import SimpleNamespace

import fakeredis
import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.maintenance import MaintenanceLauncher
from pipeline.config import Settings
from pipeline.maintenance.runs import COMPLETE, RunStore

pytestmark = pytest.mark.security  # pytest -m security: the security suite (docs/testing.md)

API = {"Authorization": "Bearer api-token"}
ADMIN = {**API, "X-Admin-Token": "admin-token"}


def _client(**settings_fields):
    settings = Settings(automem_api_token="api-token", admin_api_token="admin-token",
                        maintenance_run_wait_seconds=0, **settings_fields)
    broker = fakeredis.FakeRedis()
    sent = []
    services = SimpleNamespace(settings=settings, broker_redis=broker)
    app = create_app(settings)
    app.state.settings = settings
    app.state.services = services
    app.state.maintenance = MaintenanceLauncher(services, send=lambda *args: sent.append(args))
    return TestClient(app, raise_server_exceptions=False), sent, broker


def test_forget_for_real_needs_the_admin_token_while_forgetting_is_off():
    client, sent, _ = _client()
    refused = client.post("/consolidate", headers=API, json={"mode": "forget", "dry_run": False})
    assert refused.status_code == 403 and refused.json()["code"] == 403
    assert "admin token" in refused.json()["message"] and "CONSOLIDATION_FORGET_INTERVAL_SECONDS" in refused.json()["message"]
    assert sent == []  # nothing was started
    wrong = client.post("/consolidate", headers={**API, "X-Admin-Token": "nope"}, json={"mode": "forget", "dry_run": False})
    assert wrong.status_code == 403 and sent == []
    assert client.post("/consolidate", headers=ADMIN, json={"mode": "forget", "dry_run": False}).status_code == 202
    assert [(s[0], s[1]) for s in sent] == [("forget", False)]


def test_what_does_not_delete_needs_only_the_api_token():
    client, sent, _ = _client()
    assert client.post("/consolidate", headers=API, json={"mode": "forget", "dry_run": True}).status_code == 202
    assert client.post("/consolidate", headers=API, json={"mode": "decay", "dry_run": False}).status_code == 202
    # full leaves forget out while forgetting is off, so it deletes nothing
    assert client.post("/consolidate", headers=API, json={"mode": "full", "dry_run": False}).status_code == 202
    assert {s[0] for s in sent} == {"forget", "decay", "creative", "cluster"}
    assert ("forget", False) not in {(s[0], s[1]) for s in sent}


def test_forgetting_switched_on_is_the_opt_in():
    client, sent, _ = _client(consolidation_forget_interval_seconds=86400)
    assert client.post("/consolidate", headers=API, json={"mode": "forget", "dry_run": False}).status_code == 202
    assert client.post("/consolidate", headers=API, json={"mode": "full", "dry_run": False}).status_code == 202
    assert [(s[0], s[1]) for s in sent].count(("forget", False)) == 2  # full includes the scheduled forget


def test_forget_without_a_configured_admin_token_is_refused_outright():
    settings = Settings(automem_api_token="api-token", maintenance_run_wait_seconds=0)
    app = create_app(settings)
    app.state.settings = settings
    app.state.services = SimpleNamespace(settings=settings, broker_redis=fakeredis.FakeRedis())
    response = TestClient(app).post("/consolidate", headers=API, json={"mode": "forget", "dry_run": False})
    assert response.status_code == 403 and "ADMIN_API_TOKEN is not set" in response.json()["message"]


def test_a_second_run_of_a_cycle_is_refused_while_one_goes_dry_or_not():
    client, sent, broker = _client()
    first = client.post("/consolidate", headers=API, json={"mode": "decay", "dry_run": True})
    runs = RunStore.from_settings(broker, Settings())
    run_id = first.json()["consolidation"]["runs"]["decay"]["run_id"]
    assert runs.start(runs.get(run_id))  # the worker took it
    again = client.post("/consolidate", headers=API, json={"mode": "decay", "dry_run": True})
    assert again.status_code == 409 and run_id in again.json()["message"], again.text
    # a dry run never holds a real one back
    assert client.post("/consolidate", headers=API, json={"mode": "decay", "dry_run": False}).status_code == 202
    runs.finish(runs.get(run_id), COMPLETE)
    assert client.post("/consolidate", headers=API, json={"mode": "decay", "dry_run": True}).status_code == 202
    assert len(sent) == 3


def test_dry_runs_hold_a_lock_of_their_own():
    runs = RunStore.from_settings(fakeredis.FakeRedis(), Settings())
    for run_id, dry in (("d1", True), ("d2", True), ("r1", False)):
        runs.create(run_id, "sync", dry, "api")
    assert runs.start(runs.get("d1")) and not runs.start(runs.get("d2"))
    assert runs.start(runs.get("r1"))  # the real run is not held back by the dry one
    runs.finish(runs.get("d1"), COMPLETE)
    assert runs.holder("sync", True) is None and runs.holder("sync", False) == "r1"
