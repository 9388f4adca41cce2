"""Every route refuses a missing or wrong token (enumerated, so a new route cannot slip through)."""

from __future__ import annotations

import re

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from api.app import create_app
from api.routes.ingest import SLACK_IMPORT_PATH
from pipeline.config import Settings

OPEN_ROUTES = {"/health"}
# Authenticated by the sender's signature instead of our token (Slack cannot send one);
# tests/integration/test_ingestion.py proves forged, stale and missing signatures get 401.
SIGNED_ROUTES = {"/ingest/slack/events"}


def _app():
    settings = Settings(automem_api_token="right-token", admin_api_token="admin-token")
    app = create_app(settings)
    app.state.settings = settings  # no lifespan: auth must refuse before any store is touched
    return app


def _walk(routes, prefix: str = ""):
    """Every (method, path), through included routers (FastAPI includes them lazily)."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield from ((m, prefix + route.path) for m in route.methods - {"HEAD", "OPTIONS"})
        elif hasattr(route, "original_router"):
            yield from _walk(route.original_router.routes, prefix + route.include_context.prefix)


def _cases():
    for method, path in sorted(set(_walk(_app().routes))):
        if path not in OPEN_ROUTES | SIGNED_ROUTES:
            yield method, re.sub(r"\{[^}]+\}", "some-id", path)


CASES = list(_cases())


def test_there_are_protected_routes():
    assert ("POST", "/memory") in CASES and ("GET", "/recall") in CASES


@pytest.mark.parametrize("method, path", CASES)
@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"X-API-Key": "wrong"}])
def test_route_refuses_without_the_right_token(method, path, headers):
    client = TestClient(_app(), raise_server_exceptions=False)
    if path == SLACK_IMPORT_PATH:  # its body is the export file
        response = client.request(method, path, headers={**headers, "Content-Type": "application/zip"}, content=b"PK")
    else:
        response = client.request(method, path, headers=headers, json={"content": "x"})
    assert response.status_code == 401, (method, path, response.text)
    assert response.json() == {"status": "error", "code": 401, "message": "missing or invalid API token"}
