"""Plain commas: the query parameters a route reads are those the client sent."""

from __future__ import annotations

import urllib.parse

import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from api.querystring import PlainCommas


def _echo(request):
    return JSONResponse({"params": list(request.query_params.multi_items()), "raw": request.scope["query_string"].decode()})


@pytest.fixture()
def client():
    with TestClient(PlainCommas(Starlette(routes=[Route("/echo", _echo)]))) as c:
        yield c


@pytest.mark.parametrize("params", [
    {"embedding": ",".join(["0.125", "-1e-3", "7"] * 130), "query": "a, b & c"},
    {"query": "literal %2C and %2c and 100%", "tags": "x,y"},  # escaped as %252C: stays as typed
    {"query": "comma at the end,", "tags": "%"},
    {"query": "ünïcode, with commas,, doubled", "limit": "5"},
])
def test_decoded_values_are_unchanged(client, params):
    sent = urllib.parse.urlencode(params)
    body = client.get(f"/echo?{sent}").json()
    assert body["params"] == [list(item) for item in params.items()]
    assert "%2C" not in body["raw"] and "%2c" not in body["raw"]


def test_lower_case_escapes_and_repeated_keys(client):
    body = client.get("/echo?tags=a%2cb&tags=c%2Cd&x=%25%32%43").json()
    assert body["params"] == [["tags", "a,b"], ["tags", "c,d"], ["x", "%2C"]]
