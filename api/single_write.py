"""``POST /memory``, the hottest route: its declaration, its answer, and the fast path that serves it.

Agents and live sources write one memory per request, hundreds a second, and in the embedded
default the one web process that answers them also owns the vector index. FastAPI's exception
middleware, router, route wrapper and dependency solving cost more CPU per single write than
validating the memory and queueing it (docs/benchmarks-log.md, "POST /memory ahead of
FastAPI's routing"). So a small ASGI middleware, ``SingleWriteFastPath``, answers this one
route itself with ``accept_single_write`` and hands every other request on.

The route declared here (``router``) is what the OpenAPI schema and route listings show; it
answers with the same function, so an app built without the middleware (the "router" build
``ops.bench.write_route`` compares against) behaves the same.

The middleware sits inside the observability middleware (request id, access log, HTTP
metrics) and the server-error handler, so a single write is logged, counted and traced like
any request, and its errors are AutoMem's envelope as everywhere else.
"""

from __future__ import annotations

from typing import Any

import redis
from fastapi import APIRouter
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from api.auth import ApiAuth, check_api_token
from api.body import read_json
from api.deps import get_limits
from api.errors import mempipe_error_response, store_down_response
from api.params import bool_param
from api.responses import ORJSONResponse
from api.writes import WriteOutcome
from pipeline.errors import MempipeError
from pipeline.records import MemoryRecord, build_new_record

MEMORY_PATH = "/memory"

router = APIRouter(dependencies=[ApiAuth], tags=["memory"])


def stored_payload(record: MemoryRecord, outcome: WriteOutcome) -> dict[str, Any]:
    return {
        "status": "success",
        "message": "Memory stored" if outcome.done else "Memory accepted and queued",
        "memory_id": record.id,
        "state": outcome.state,
        "type": record.type,
        "confidence": record.confidence,
        "tags": record.tags,
        "importance": record.importance,
        "timestamp": record.timestamp,
        "updated_at": record.updated_at,
        "metadata": record.metadata,
    }


async def accept_single_write(request: Request) -> ORJSONResponse:
    """Store one memory: 201 once recallable (``wait``, bounded), else 202 once durably queued."""
    state = request.app.state
    check_api_token(request, state.settings)
    wait = bool_param(request, "wait", True)
    body = await read_json(request, state.settings.max_request_bytes)
    record = build_new_record(body, get_limits(request))
    writes = state.writes
    await writes.admit()
    outcome = await writes.store(record, wait)
    return ORJSONResponse(stored_payload(record, outcome), status_code=201 if outcome.done else 202)


@router.post(MEMORY_PATH, status_code=201, summary="Store a memory (queued; waits until recallable unless wait=false)")
async def store_memory(request: Request):
    """Declares the route; ``SingleWriteFastPath`` answers it ahead of FastAPI's routing with
    the same function (its ``wait`` parameter: ``api.openapi``)."""
    return await accept_single_write(request)


class SingleWriteFastPath:
    """ASGI middleware: answers ``POST /memory`` with ``accept_single_write``; passes the rest on."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not _is_memory_path(scope):
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        try:
            response = await accept_single_write(request)
        except MempipeError as exc:
            response = mempipe_error_response(exc)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            response = store_down_response(request, exc)
        # Anything else goes on up to the server-error handler: a 500 in the envelope, logged.
        await response(scope, receive, send)


def _is_memory_path(scope: Scope) -> bool:
    path = scope["path"]
    return path == MEMORY_PATH or path == scope.get("root_path", "") + MEMORY_PATH
