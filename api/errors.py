"""AutoMem's error envelope, applied in one place: {"status": "error", "code": N, "message": "..."}."""

from __future__ import annotations

import logging

import redis
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.responses import ORJSONResponse
from pipeline.errors import MempipeError, Overloaded

log = logging.getLogger(__name__)


def envelope(code: int, message: str, headers: dict[str, str] | None = None) -> ORJSONResponse:
    return ORJSONResponse({"status": "error", "code": code, "message": message}, status_code=code, headers=headers)


def _validation_message(exc: RequestValidationError) -> str:
    first = exc.errors()[0]
    location = ".".join(str(p) for p in first.get("loc", ()) if p not in ("query", "path", "body")) or "request"
    return f"{location}: {first.get('msg', 'invalid value')}"


def mempipe_error_response(exc: MempipeError) -> ORJSONResponse:
    """The envelope for one of our own errors, with the headers its status calls for."""
    headers = {"WWW-Authenticate": "Bearer"} if exc.status_code == 401 else None
    if isinstance(exc, Overloaded):
        headers = {"Retry-After": str(exc.retry_after)}
    return envelope(exc.status_code, exc.message, headers)


def store_down_response(request: Request, exc: Exception) -> ORJSONResponse:
    """503 for a store or broker connection error that reached a route unconverted."""
    log.warning("store unreachable during %s %s: %s", request.method, request.url.path, exc)
    return envelope(503, "a backing store is unreachable; try again shortly")


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(MempipeError)
    async def _mempipe_error(_: Request, exc: MempipeError):
        return mempipe_error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _request_validation(_: Request, exc: RequestValidationError):
        return envelope(400, _validation_message(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException):
        return envelope(exc.status_code, str(exc.detail))

    @app.exception_handler(redis.ConnectionError)
    @app.exception_handler(redis.TimeoutError)
    async def _store_down(request: Request, exc: Exception):
        return store_down_response(request, exc)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception):
        log.exception("unhandled error during %s %s", request.method, request.url.path)
        return envelope(500, "internal error")
