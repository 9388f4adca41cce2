"""A starting process waits for a store that is loading, and fails clearly on one that is gone."""

from __future__ import annotations

import asyncio
import socket

import pytest
import redis

import api.app as app_module
import ops.serve as serve
from pipeline.config import Settings
from pipeline.errors import ConfigurationError
from pipeline.store_wait import Store, graph_url, redacted, takes_connections, wait_for_store


class ScriptedStore:
    """A client whose PINGs answer from a script: an exception to raise, or True."""

    def __init__(self, script, clock):
        self.script, self.clock, self.pings = list(script), clock, 0

    def ping(self):
        self.pings += 1
        answer = self.script.pop(0) if self.script else self.script_end
        if isinstance(answer, Exception):
            raise answer
        return answer

    script_end = True


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def _wait(client, clock, silence_s=1.0, listening=lambda: False):
    wait_for_store(Store("graph", "redis://h:1"), client, silence_s, listening=listening, clock=clock, sleep=clock.sleep)


def test_a_store_that_answers_loading_is_waited_for_far_past_the_silence_budget():
    clock = FakeClock()
    loading = [redis.BusyLoadingError("LOADING")] * 500  # 50 s of LOADING at one look per 0.1 s
    client = ScriptedStore([redis.ConnectionError("refused")] * 3 + loading, clock)
    _wait(client, clock, silence_s=1.0)
    assert client.pings == 504 and clock.now > 50


def test_a_store_that_never_answers_fails_after_the_budget_with_what_to_check():
    clock = FakeClock()
    client = ScriptedStore([], clock)
    client.script_end = redis.ConnectionError("Connection refused")
    with pytest.raises(ConfigurationError) as failure:
        _wait(client, clock, silence_s=2.0)
    assert 2.0 < clock.now < 2.5
    assert "did not answer within 2s" in failure.value.message and "STORE_START_WAIT_S" in failure.value.message


def test_silence_after_loading_counts_from_its_last_answer():
    clock = FakeClock()
    client = ScriptedStore([redis.BusyLoadingError("LOADING")] * 30, clock)
    client.script_end = redis.TimeoutError("timed out")
    with pytest.raises(ConfigurationError):
        _wait(client, clock, silence_s=1.0)
    assert 3.8 < clock.now < 4.5  # LOADING until 2.9 s, then the 1 s budget


def test_a_store_whose_port_takes_connections_but_answers_late_is_waited_for():
    """FalkorDB reads a graph as one unit: no LOADING answer for tens of seconds, reads time out."""
    clock = FakeClock()
    client = ScriptedStore([redis.TimeoutError("Timeout reading from socket")] * 300, clock)
    _wait(client, clock, silence_s=1.0, listening=lambda: True)
    assert client.pings == 301 and clock.now > 30


def test_timeouts_from_a_port_that_takes_no_connection_are_silence():
    clock = FakeClock()
    client = ScriptedStore([], clock)
    client.script_end = redis.TimeoutError("Timeout connecting to server")
    with pytest.raises(ConfigurationError, match="did not answer within 1s"):
        _wait(client, clock, silence_s=1.0, listening=lambda: False)
    assert clock.now < 1.5


def test_takes_connections_asks_the_clients_own_port():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()  # accepts into its backlog, never answers: a server busy loading
        port = server.getsockname()[1]
        assert takes_connections(redis.Redis(host="127.0.0.1", port=port))
    assert not takes_connections(redis.Redis(host="127.0.0.1", port=port))  # closed now
    assert not takes_connections(redis.Redis(unix_socket_path="/nonexistent.sock"))


def test_refused_credentials_fail_at_once():
    clock = FakeClock()
    client = ScriptedStore([redis.AuthenticationError("invalid password")], clock)
    with pytest.raises(ConfigurationError, match="refused this process's credentials"):
        _wait(client, clock)
    assert client.pings == 1


def test_the_graph_is_reached_as_plain_redis_and_its_password_stays_out_of_messages():
    assert graph_url(Settings(falkordb_host="g", falkordb_port=7000)) == "redis://g:7000"
    assert graph_url(Settings(falkordb_host="g", falkordb_port=7000, falkordb_password="p@ss")) == "redis://:p%40ss@g:7000"
    assert graph_url(Settings(falkordb_url="falkors://u:pw@host:6380")) == "rediss://u:pw@host:6380"
    assert graph_url(Settings(falkordb_url="redis://host:6380/0")) == "redis://host:6380/0"
    assert redacted("rediss://u:pw@host:6380") == "rediss://***@host:6380"
    assert redacted("redis://host:6380") == "redis://host:6380"


def test_the_launcher_starts_the_pipeline_while_the_stores_load_and_the_clock_once_they_answer(monkeypatch, tmp_path):
    supervisor = serve.Supervisor(Settings(MEMPIPE_DATA_DIR=str(tmp_path)))
    events: list[str] = []
    for server in (supervisor.broker, supervisor.graph):
        monkeypatch.setattr(server, "spawn", lambda name=server.name: events.append(f"spawn {name}"))
        monkeypatch.setattr(server, "wait_ready", lambda *args, name=server.name, **kwargs: events.append(f"ready {name}"))
    monkeypatch.setattr(supervisor, "_spawn", lambda name, *args, **kwargs: events.append(name))
    supervisor.start()
    assert events == ["spawn broker", "spawn graph", "worker", "enricher", "web", "ready broker", "ready graph", "clock"]


def test_the_web_builds_its_model_and_opens_its_shard_while_the_graph_still_loads(monkeypatch):
    events: list = []

    class GraphLoading(Exception):
        """Stands for the graph's load: the lifespan is not followed past it."""

    class RecordingServices:
        def __init__(self, settings, give_way=None):
            pass

        @property
        def embedder(self):
            events.append("model built")

        @property
        def vectors(self):
            events.append("shard opened")

    def wait_for_stores(settings, names=("broker", "graph")):
        events.append(("wait", names))
        if "graph" in names:
            raise GraphLoading

    monkeypatch.setattr(app_module, "import_provider_libraries", lambda settings: events.append("imports"))
    monkeypatch.setattr(app_module, "wait_for_stores", wait_for_stores)
    monkeypatch.setattr(app_module, "Services", RecordingServices)

    async def start() -> None:
        async with app_module.web_lifespan(app=None, settings=Settings(), mcp=None):
            pass

    with pytest.raises(GraphLoading):
        asyncio.run(start())
    assert events == ["imports", ("wait", ("broker",)), "model built", "shard opened", ("wait", ("graph",))]


def test_the_launchers_processes_leave_a_loading_graph_to_the_launcher(monkeypatch, tmp_path):
    """The launcher watches its servers' progress; its processes wait as long as the setting
    allows, so a graph silent for a minute while it decodes (1M memories) is not a dead one."""
    assert Settings(STORE_START_WAIT_S=serve.children_store_wait({})["STORE_START_WAIT_S"]).store_start_wait_s == 600
    assert serve.children_store_wait({"STORE_START_WAIT_S": "45"}) == {}  # the user's word stands
    monkeypatch.delenv("STORE_START_WAIT_S", raising=False)
    supervisor = serve.Supervisor(Settings(MEMPIPE_DATA_DIR=str(tmp_path)))
    envs: dict[str, dict] = {}
    for server in (supervisor.broker, supervisor.graph):
        monkeypatch.setattr(server, "spawn", lambda: None)
        monkeypatch.setattr(server, "wait_ready", lambda *args, **kwargs: None)
    monkeypatch.setattr(supervisor, "_spawn", lambda name, args, env, **kwargs: envs.setdefault(name, env))
    supervisor.start()
    assert {name: env["STORE_START_WAIT_S"] for name, env in envs.items()} == dict.fromkeys(
        ("worker", "enricher", "web", "clock"), "600")
