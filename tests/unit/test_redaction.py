"""Whatever spelling of ``api_key`` the server accepts as the token, the logs mask its value."""

from __future__ import annotations

import logging

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from api.auth import presented_token
from api.observability import AccessLog
from pipeline.observability.logs import redact

pytestmark = pytest.mark.security  # pytest -m security: the security suite (docs/testing.md)

TOKEN = "s3cret-Token_1"


def _encoded(name: str, positions: set[int], upper_hex: bool) -> str:
    form = "%{:02X}" if upper_hex else "%{:02x}"
    return "".join(form.format(ord(c)) if i in positions else c for i, c in enumerate(name))


def _spellings(name: str = "api_key") -> list[str]:
    every = set(range(len(name)))
    found = {_encoded(name, {i}, upper) for i in every for upper in (True, False)}
    found |= {_encoded(name, every, True), _encoded(name, every, False), _encoded(name, {0, 3, 6}, True)}
    return sorted(found)


SPELLINGS = _spellings()


def _accepted(query: str) -> str | None:
    scope = {"type": "http", "method": "GET", "path": "/recall", "query_string": query.encode(), "headers": []}
    return presented_token(Request(scope))


@pytest.mark.parametrize("key", SPELLINGS)
def test_every_spelling_the_server_accepts_is_masked(key):
    query = f"query=x&{key}={TOKEN}&limit=5"
    assert _accepted(query) == TOKEN  # the server takes it as the token...
    cleaned = redact(f"GET /recall?{query}")
    assert TOKEN not in cleaned and cleaned.endswith("=***&limit=5")  # ...so the log must not show it


@pytest.mark.parametrize("key", ["admin%5Fapi%5Fkey", "%74oken", "%41PI_KEY"])
def test_other_secret_keys_are_masked_however_encoded(key):
    assert TOKEN not in redact(f"/x?{key}={TOKEN}")


def test_encoded_text_without_a_key_is_kept():
    text = "GET /recall?embedding=0.1%2C0.2%2C0.3&query=caf%C3%A9+%6Dusic"
    assert redact(text) == text


def test_the_access_log_masks_an_encoded_key(caplog):
    app = AccessLog(Starlette(routes=[Route("/recall", lambda request: PlainTextResponse(presented_token(request)))]))
    with caplog.at_level(logging.INFO, logger="mempipe.access"), TestClient(app) as client:
        assert client.get(f"/recall?api%5Fkey={TOKEN}&query=x").text == TOKEN
    [line] = [r for r in caplog.records if r.name == "mempipe.access"]
    assert TOKEN not in line.query and line.query == "api%5Fkey=***&query=x"
