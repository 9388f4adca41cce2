"""Requests a browser could be made to send are refused on every route, in AutoMem's envelope."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from starlette.responses import PlainTextResponse

from api.app import create_app
from api.guard import RequestGuard, host_name
from api.routes.ingest import SLACK_IMPORT_PATH, SLACK_UPLOAD_TYPES
from pipeline.config import Settings
from tests.unit.test_route_auth import _walk

pytestmark = pytest.mark.security  # pytest -m security: the security suite (docs/testing.md)

LOOPBACK = "http://127.0.0.1:8001"
BODY_METHODS = {"POST", "PATCH", "PUT"}


def _app(**settings):
    settings = Settings(**settings)
    app = create_app(settings)
    app.state.settings = settings  # no lifespan: the guard must answer before any store is touched
    return app


def _routes() -> list[tuple[str, str]]:
    found = {(m, re.sub(r"\{[^}]+\}", "some-id", p)) for m, p in _walk(_app().routes)}
    return sorted(found | {("POST", "/mcp"), ("GET", "/mcp")})


ROUTES = _routes()
BODY_ROUTES = [(m, p) for m, p in ROUTES if m in BODY_METHODS and p != SLACK_IMPORT_PATH]


def _envelope(response, code: int) -> str:
    assert response.status_code == code, response.text
    body = response.json()
    assert body["status"] == "error" and body["code"] == code
    return body["message"]


def test_the_enumeration_covers_the_fast_path_and_mcp():
    assert ("POST", "/memory") in BODY_ROUTES and ("POST", "/mcp") in BODY_ROUTES
    assert ("GET", "/health") in ROUTES and ("PATCH", "/memory/some-id") in BODY_ROUTES


@pytest.mark.parametrize("method, path", ROUTES)
def test_a_rebound_name_on_loopback_is_refused_everywhere(method, path):
    client = TestClient(_app(), base_url=LOOPBACK, raise_server_exceptions=False)
    response = client.request(method, path, headers={"Host": "attacker.example:8001"}, json={"content": "x"})
    message = _envelope(response, 421)
    assert "attacker.example:8001" in message and "ALLOWED_HOSTS" in message


@pytest.mark.parametrize("method, path", BODY_ROUTES)
@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None])
def test_a_body_must_be_declared_json(method, path, content_type):
    client = TestClient(_app(), base_url=LOOPBACK, raise_server_exceptions=False)
    headers = {"Content-Type": content_type} if content_type else {}
    response = client.request(method, path, headers=headers, content=b'{"content": "from a web page"}')
    message = _envelope(response, 415)
    assert message.startswith("Content-Type: expected application/json"), message


@pytest.mark.parametrize("method, path", [(m, p) for m, p in ROUTES if m in BODY_METHODS | {"DELETE"}])
def test_another_sites_origin_is_refused(method, path):
    client = TestClient(_app(), base_url=LOOPBACK, raise_server_exceptions=False)
    # A bodyless cross-site POST needs no CORS permission: only its Origin gives it away.
    response = client.request(method, path, headers={"Origin": "https://attacker.example"})
    assert "https://attacker.example" in _envelope(response, 403)


def test_a_tokenless_server_refuses_requests_from_beyond_loopback():
    client = TestClient(_app(), base_url="http://10.1.2.3:8001", raise_server_exceptions=False)
    message = _envelope(client.get("/health"), 403)
    assert "AUTOMEM_API_TOKEN" in message
    assert _envelope(client.post("/memory", json={"content": "x"}), 403) == message


# --- what passes: the guard around a stub app ---------------------------------------------

def _guarded(**settings) -> TestClient:
    async def ok(scope, receive, send):
        await PlainTextResponse("passed")(scope, receive, send)

    guard = RequestGuard(ok, Settings(**settings), upload_types={SLACK_IMPORT_PATH: SLACK_UPLOAD_TYPES})
    return TestClient(guard, base_url=LOOPBACK)


@pytest.mark.parametrize("host", ["127.0.0.1:8001", "localhost:8001", "LOCALHOST", "[::1]:8001", "127.0.0.2"])
def test_loopback_names_pass(host):
    assert _guarded().get("/recall", headers={"Host": host}).text == "passed"


def test_allowed_hosts_adds_names_for_host_and_origin():
    client = _guarded(allowed_hosts="memory.example.org, proxy.internal:8443")
    assert client.get("/recall", headers={"Host": "memory.example.org"}).text == "passed"
    assert client.get("/recall", headers={"Host": "proxy.internal:8443"}).text == "passed"
    assert client.post("/memory", json={}, headers={"Origin": "https://memory.example.org"}).text == "passed"
    assert client.get("/recall", headers={"Host": "other.example.org"}).status_code == 421


def test_same_origin_pages_pass():
    # The OpenAPI page on this server calling the API: Origin and Host name the same server.
    client = _guarded()
    assert client.post("/memory", json={}, headers={"Origin": LOOPBACK}).text == "passed"
    assert client.post("/memory", json={}, headers={"Origin": "http://localhost:3000"}).status_code == 403
    assert client.post("/memory", json={}, headers={"Origin": "null"}).status_code == 403


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8", "Application/JSON",
                                          "application/merge-patch+json"])
def test_json_bodies_pass(content_type):
    assert _guarded().post("/memory", content=b"{}", headers={"Content-Type": content_type}).text == "passed"


def test_bodyless_requests_need_no_content_type():
    client = _guarded()
    assert client.post("/admin/deadletters/replay").text == "passed"  # as curl -X POST sends it
    assert client.post("/consolidate", headers={"Content-Length": "0", "Content-Type": "text/plain"}).text == "passed"


def test_the_upload_route_takes_its_own_types_only():
    client = _guarded()
    assert client.post(SLACK_IMPORT_PATH, content=b"PK..", headers={"Content-Type": "application/zip"}).text == "passed"
    refused = client.post(SLACK_IMPORT_PATH, content=b"PK..", headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert refused.status_code == 415 and "application/zip" in refused.json()["message"]


def test_public_interfaces_with_a_token_take_any_name():
    client = TestClient(RequestGuard(PlainTextResponse("passed"), Settings(automem_api_token="t")),
                        base_url="http://10.1.2.3:8001")
    assert client.get("/recall", headers={"Host": "memory.example.org"}).text == "passed"


def test_in_process_clients_are_not_on_an_interface():
    # The MCP tools call the routes through an ASGI transport: no socket, no Host to check.
    client = TestClient(RequestGuard(PlainTextResponse("passed"), Settings()), base_url="http://mempipe.internal")
    assert client.get("/recall").text == "passed"


@pytest.mark.parametrize("authority, name", [("[::1]:8001", "::1"), ("Example.COM:80", "example.com"), ("::1", "::1"),
                                             ("localhost", "localhost")])
def test_host_name(authority, name):
    assert host_name(authority) == name
