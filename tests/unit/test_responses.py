"""The JSON response class: the bytes FastAPI's deprecated ORJSONResponse gave, and no warning."""

from __future__ import annotations

import warnings

import fastapi.exceptions
import numpy as np
import orjson
from fastapi.testclient import TestClient

from api.app import create_app
from api.errors import envelope
from api.responses import ORJSONResponse
from pipeline.config import Settings

# FastAPI's own warning class (a UserWarning) where it has one; older releases warned with none.
FastAPIDeprecationWarning = getattr(fastapi.exceptions, "FastAPIDeprecationWarning", DeprecationWarning)


def test_renders_like_orjson_with_non_string_keys_and_numpy():
    content = {"status": "success", 1: "int key", "score": np.float32(0.5), "vector": np.arange(3, dtype=np.int64),
               "text": "naïve – ünïcode"}
    response = ORJSONResponse(content, status_code=207)
    assert response.body == orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY)
    assert response.body.startswith(b'{"status":"success","1":"int key","score":0.5,"vector":[0,1,2]')
    assert response.status_code == 207 and response.media_type == "application/json"


def test_error_envelope_and_app_raise_no_deprecation_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", FastAPIDeprecationWarning)
        assert envelope(404, "memory not found").body == b'{"status":"error","code":404,"message":"memory not found"}'
        settings = Settings(automem_api_token="t")
        app = create_app(settings)
        app.state.settings = settings  # no lifespan: the auth refusal below touches no store
        refused = TestClient(app).get("/recall")
    assert refused.status_code == 401
    assert refused.headers["content-type"] == "application/json"
    assert refused.content == b'{"status":"error","code":401,"message":"missing or invalid API token"}'
