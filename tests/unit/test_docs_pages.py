"""The OpenAPI schema and its pages are behind the API token, and still usable from a browser."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.config import Settings

pytestmark = pytest.mark.security  # pytest -m security: the security suite (docs/testing.md)

PAGES = ["/openapi.json", "/docs", "/redoc"]


def _client(**settings) -> TestClient:
    config = Settings(**settings)
    app = create_app(config)
    app.state.settings = config
    return TestClient(app)


@pytest.mark.parametrize("path", PAGES)
def test_pages_need_the_token(path):
    client = _client(automem_api_token="right-token")
    refused = client.get(path)
    assert refused.status_code == 401 and refused.json()["message"] == "missing or invalid API token"
    assert client.get(path, headers={"Authorization": "Bearer right-token"}).status_code == 200


def test_the_schema_is_the_shaped_one():
    schema = _client(automem_api_token="t").get("/openapi.json", headers={"X-API-Key": "t"}).json()
    assert "ErrorEnvelope" in schema["components"]["schemas"] and "/memory" in schema["paths"]
    assert not any(path in schema["paths"] for path in PAGES)


@pytest.mark.parametrize("path", ["/docs", "/redoc"])
def test_a_page_opened_with_api_key_loads_the_schema_with_it(path):
    page = _client(automem_api_token="a b&c").get(path, params={"api_key": "a b&c"})
    assert page.status_code == 200 and "/openapi.json?api_key=a+b%26c" in page.text


def test_without_a_token_configured_they_are_open():
    # Only a loopback server may run without a token (api.bind, api.guard).
    client = _client()
    assert all(client.get(path).status_code == 200 for path in PAGES)
    assert client.get("/docs/oauth2-redirect").status_code == 404  # FastAPI's open extra page is gone
