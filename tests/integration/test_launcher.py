"""The one command (`make run` = `python -m ops.serve`): everything starts, the README's curl
flow works with the token it generated, Ctrl-C stops every process, and a restart finds the data."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest

from ops.bench.embedded import EmbeddedService
from ops.bench.suite.procs import alive
from ops.redis_servers import port_open
from ops.bench.stack import wait_until

pytestmark = pytest.mark.integration

ROLES = {"web", "worker", "enricher", "clock", "redis-broker", "redis-graph"}


def _log(service: EmbeddedService) -> str:
    return (service.data_dir / "serve.log").read_text(errors="replace")


def _client(service: EmbeddedService) -> httpx.Client:
    # As the README: the token read from data/tokens.json, sent as a Bearer header.
    token = json.loads((service.data_dir / "tokens.json").read_text())["AUTOMEM_API_TOKEN"]
    return httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {token}"}, timeout=60)


def _autogroup(pid: int) -> str:
    path = Path(f"/proc/{pid}/autogroup")
    return path.read_text().split()[0] if path.exists() else ""


def _assert_one_session_and_a_group_each(service: EmbeddedService) -> None:
    """Every child shares the launcher's session, so its niceness counts against the web's
    (the autogroup scheduler shares the CPU between sessions equally), and leads a process
    group other than the launcher's, so a terminal's Ctrl-C reaches the launcher alone."""
    session, group = os.getsid(service.process.pid), os.getpgid(service.process.pid)
    for role, pids in service.processes().items():
        for pid in pids if role != "serve" else []:
            assert os.getsid(pid) == session, (role, pid)
            assert os.getpgid(pid) != group, (role, pid)
            assert _autogroup(pid) == _autogroup(service.process.pid), (role, pid)


def _ctrl_c(service: EmbeddedService) -> None:
    pids = [pid for role, found in service.processes().items() for pid in found]
    service.stop(remove=False)  # SIGINT to the launcher's process group, as Ctrl-C in its terminal
    assert service.process.returncode == 0, service.log_tail()
    wait_until(lambda: not any(alive(pid) for pid in pids), timeout=30, message="every child process gone")
    assert not any(port_open("127.0.0.1", port) for port in (service.port, service.broker_port, service.graph_port))
    assert "mempipe: stopped" in _log(service)


def test_one_command_serves_the_readme_flow_stops_on_ctrl_c_and_keeps_the_data():
    service = EmbeddedService(env_overrides={"EMBEDDING_PROVIDER": "hash"}, tokens_from_launcher=True)
    try:
        service.start()
        assert ROLES <= set(service.processes()), service.processes()
        _assert_one_session_and_a_group_each(service)
        tokens = json.loads((service.data_dir / "tokens.json").read_text())
        assert f"AUTOMEM_API_TOKEN={tokens['AUTOMEM_API_TOKEN']}" in _log(service)  # printed for the newcomer
        assert (service.data_dir / "tokens.json").stat().st_mode & 0o777 == 0o600

        with _client(service) as api:
            stored = api.post("/memory", json={"content": "We chose PostgreSQL for the billing database",
                                               "tags": ["project-alpha", "database"], "importance": 0.9})
            assert stored.status_code == 201, stored.text
            assert stored.json()["status"] == "success" and stored.json()["state"] == "recallable"
            memory_id = stored.json()["memory_id"]
            assert api.get(f"/memory/{memory_id}").json()["memory"]["content"].startswith("We chose PostgreSQL")
            hits = api.get("/recall", params={"query": "PostgreSQL billing database", "tags": "project-alpha", "limit": 5}).json()
            assert hits["results"][0]["id"] == memory_id
            assert api.patch(f"/memory/{memory_id}", json={"importance": 0.5}).status_code == 200
            queued = api.post("/memory", params={"wait": "false"}, json={"content": "fire and forget", "tags": ["project-alpha"]})
            assert queued.status_code == 202
            wait_until(lambda: api.get("/health").json()["vector_count"] == 2, timeout=60, message="both memories indexed")

        # Persistence on disk: AOF for both redis-servers, the Edge shard under the data dir.
        for store in ("broker", "graph"):
            assert any((service.data_dir / store).rglob("*.aof")), f"no AOF under {store}/"
        _ctrl_c(service)

        service.start()  # same data dir and ports
        assert json.loads((service.data_dir / "tokens.json").read_text()) == tokens  # the same tokens again
        with _client(service) as api:
            memory = api.get(f"/memory/{memory_id}").json()["memory"]
            assert memory["importance"] == 0.5  # the update survived too
            hits = api.get("/recall", params={"query": "PostgreSQL billing database", "tags": "project-alpha"}).json()
            assert hits["results"][0]["id"] == memory_id
            assert api.get("/health").json()["vector_count"] == 2
            assert api.delete(f"/memory/{memory_id}").status_code == 200
            assert api.get(f"/memory/{memory_id}").status_code == 404
        _ctrl_c(service)
    finally:
        service.stop()
