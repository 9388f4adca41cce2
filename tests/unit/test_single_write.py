"""POST /memory answered ahead of FastAPI's routing: same contract, same observability."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import redis
from fastapi import Request
from fastapi.testclient import TestClient

from api.app import create_app
from api.auth import check_api_token, require_api_token
from api.writes import WriteOutcome
from pipeline.config import Settings
from pipeline.errors import Overloaded
from pipeline.records import Limits

TOKEN = {"Authorization": "Bearer right-token"}


class FakeWrites:
    """The write path as the route sees it: records what was stored, or fails as told."""

    def __init__(self, fail_admit: Exception | None = None, fail_store: Exception | None = None):
        self.stored: list[tuple[str, bool]] = []
        self._fail_admit, self._fail_store = fail_admit, fail_store

    async def admit(self) -> None:
        if self._fail_admit:
            raise self._fail_admit

    async def store(self, record, wait: bool) -> WriteOutcome:
        if self._fail_store:
            raise self._fail_store
        self.stored.append((record.content, wait))
        return WriteOutcome(done=wait, state="recallable" if wait else "queued")


async def _no_routed_single_write(request: Request) -> None:
    """Every route's auth dependency, refusing to let FastAPI's routing answer ``POST /memory``:
    the fast path checks the token itself, so only a routed single write reaches this."""
    if request.method == "POST" and request.url.path == "/memory":
        raise AssertionError("POST /memory went through FastAPI's routing")
    check_api_token(request, request.app.state.settings)


def _client(writes: FakeWrites, **settings) -> TestClient:
    config = Settings(automem_api_token="right-token", **settings)
    app = create_app(config)
    app.dependency_overrides[require_api_token] = _no_routed_single_write
    # No lifespan: the route reads only these from the app's state.
    app.state.settings = config
    app.state.writes = writes
    app.state.limits = Limits.from_settings(config, vector_size=8)
    app.state.services = SimpleNamespace(vector_size=8, settings=config)
    return TestClient(app, raise_server_exceptions=False)


def test_a_single_write_is_answered_ahead_of_the_router():
    writes = FakeWrites()
    client = _client(writes)
    queued = client.post("/memory", params={"wait": "false"}, json={"content": "queued note", "tags": ["a"]}, headers=TOKEN)
    stored = client.post("/memory", json={"content": "waited note"}, headers=TOKEN)
    assert queued.status_code == 202, queued.text
    body = queued.json()
    assert body["status"] == "success" and body["state"] == "queued" and body["tags"] == ["a"]
    assert body["message"] == "Memory accepted and queued" and body["memory_id"]
    assert set(body) == {"status", "message", "memory_id", "state", "type", "confidence", "tags", "importance",
                         "timestamp", "updated_at", "metadata"}
    assert stored.status_code == 201 and stored.json()["message"] == "Memory stored"
    assert writes.stored == [("queued note", False), ("waited note", True)]


def _envelope(response, code: int) -> str:
    assert response.status_code == code, response.text
    body = response.json()
    assert body["status"] == "error" and body["code"] == code
    return body["message"]


def test_errors_are_the_envelope_with_their_headers():
    client = _client(FakeWrites())
    refused = client.post("/memory", json={"content": "x"})
    assert _envelope(refused, 401) == "missing or invalid API token"
    assert refused.headers["www-authenticate"] == "Bearer"
    assert _envelope(client.post("/memory", content=b"{not json", headers={**TOKEN, "Content-Type": "application/json"}), 400).startswith("body: malformed JSON")
    assert _envelope(client.post("/memory", json={"content": "   "}, headers=TOKEN), 400).startswith("content")
    assert _envelope(client.post("/memory", params={"wait": "maybe"}, json={"content": "x"}, headers=TOKEN), 400).startswith("wait:")
    big = _client(FakeWrites(), max_request_bytes=64)
    assert _envelope(big.post("/memory", json={"content": "x" * 200}, headers=TOKEN), 413).startswith("body:")

    behind = _client(FakeWrites(fail_admit=Overloaded("the pipeline is behind", 7)))
    response = behind.post("/memory", json={"content": "x"}, headers=TOKEN)
    assert _envelope(response, 429) == "the pipeline is behind" and response.headers["retry-after"] == "7"

    down = _client(FakeWrites(fail_store=redis.ConnectionError("refused")))
    assert _envelope(down.post("/memory", json={"content": "x"}, headers=TOKEN), 503).startswith("a backing store")

    broken = _client(FakeWrites(fail_store=RuntimeError("bug")))
    assert _envelope(broken.post("/memory", json={"content": "x"}, headers=TOKEN), 500) == "internal error"


def test_single_writes_are_logged_and_traced(caplog):
    # Counted too: tests/integration/test_metrics.py reads POST /memory's http_requests_total
    # over the real stack (in one test process only the first app's instrumentator registers).
    client = _client(FakeWrites())
    with caplog.at_level(logging.INFO, logger="mempipe.access"):
        response = client.post("/memory", params={"wait": "false"}, json={"content": "x"},
                               headers={**TOKEN, "X-Request-ID": "5f1d3b1c9a0e4f4b8c2d7e6a1b0c9d8e"})
    assert response.status_code == 202
    assert response.headers["x-request-id"] == "5f1d3b1c9a0e4f4b8c2d7e6a1b0c9d8e"
    lines = [r for r in caplog.records if r.name == "mempipe.access"]
    assert [(r.method, r.path, r.status) for r in lines] == [("POST", "/memory", 202)]


def test_other_routes_and_methods_still_go_through_the_router():
    client = _client(FakeWrites())
    # The batch route is FastAPI's: its own validation answers (the body has no "memories").
    assert _envelope(client.post("/memory/batch", json={"content": "x"}, headers=TOKEN), 400).startswith("memories")
    # GET /memory is no route at all: the router's 405 (POST exists), not the fast path.
    assert client.get("/memory", headers=TOKEN).status_code == 405
