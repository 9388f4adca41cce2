"""The JSON response every route answers with, serialised by orjson.

FastAPI 0.128+ deprecates its own ``fastapi.responses.ORJSONResponse`` in favour of response
models (Pydantic serialises those in Rust). mempipe's routes return free-form dicts built by
the pipeline (recall results, health, run reports) and pick their status code per call, so
they keep returning a response object directly — which FastAPI's docs on returning a response
directly still recommend for that case — and this class keeps the bytes identical to what the
deprecated one produced: same orjson options, same media type.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi.responses import JSONResponse

ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


class ORJSONResponse(JSONResponse):
    """``application/json`` rendered with orjson (non-string keys and numpy values allowed)."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=ORJSON_OPTIONS)
