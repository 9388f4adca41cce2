"""The web process's observability: request ids, an access log, and ``/metrics``.

- asgi-correlation-id takes ``X-Request-ID`` (or makes one), echoes it on the response and
  sets the request id every log line and every enqueued message carries.
- ``AccessLog`` writes one JSON line per request: method, path, redacted query, status,
  duration. Tokens never appear (the query is redacted; headers are not logged).
- prometheus-fastapi-instrumentator counts requests and times them per route template.
- ``/metrics`` serves this process's registry (HTTP, store, embedding and, for the stages
  this process consumes, per-actor metrics) plus the broker's queue gauges.
"""

from __future__ import annotations

import logging
import time

from asgi_correlation_id import CorrelationIdMiddleware
from fastapi import APIRouter, FastAPI
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_fastapi_instrumentator import Instrumentator
from prometheus_fastapi_instrumentator.middleware import PrometheusInstrumentatorMiddleware
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.auth import ApiAuth
from pipeline.config import Settings
from pipeline.observability.logs import configure_logging, redact
from pipeline.observability.drift_stats import DriftCollector, SyncGuardCollector
from pipeline.observability.failed_writes import FailedWritesCollector
from pipeline.observability.queue_stats import QueueCollector

access_log = logging.getLogger("mempipe.access")
QUIET_PATHS = frozenset({"/health", "/metrics"})  # polled constantly: logged at DEBUG
# A recall can carry its query embedding (~4 kB of numbers) in the query string; the log keeps
# the start of a long query and says how much it left out.
LOGGED_QUERY_CHARS = 512


def _logged_query(query_string: bytes) -> str | None:
    if not query_string:
        return None
    query = redact(query_string.decode("latin-1"))
    if len(query) > LOGGED_QUERY_CHARS:
        query = f"{query[:LOGGED_QUERY_CHARS]}…(+{len(query) - LOGGED_QUERY_CHARS} chars)"
    return query


class AccessLog:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = {"code": 500}

        async def record_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, record_status)
        finally:
            path = scope.get("path", "")
            access_log.log(
                logging.DEBUG if path in QUIET_PATHS else logging.INFO,
                "%s %s %s", scope.get("method"), path, status["code"],
                extra={
                    "method": scope.get("method"),
                    "path": path,
                    "query": _logged_query(scope.get("query_string", b"")),
                    "status": status["code"],
                    "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                },
            )


class _RouteNameCache(PrometheusInstrumentatorMiddleware):
    """The instrumentator's middleware, remembering which route template a path belongs to.

    It finds a request's template by matching the path against every route before the app
    runs: a cost on every request for an answer that depends
    only on the method and the path while the routes stay as they are. Kept per instance and
    bounded, so paths carrying ids (``/memory/{id}``) cannot grow it without limit.
    """

    def __init__(self, app: ASGIApp, **options) -> None:
        super().__init__(app, **options)
        self._handlers: dict[tuple[str, str, str], tuple[str, bool]] = {}

    def _get_handler(self, request: Request) -> tuple[str, bool]:
        scope = request.scope
        key = (scope.get("method", ""), scope.get("root_path", ""), scope.get("path", ""))
        handler = self._handlers.get(key)
        if handler is None:
            handler = super()._get_handler(request)
            if len(self._handlers) >= ROUTE_NAME_CACHE_SIZE:
                self._handlers.clear()
            self._handlers[key] = handler
        return handler


ROUTE_NAME_CACHE_SIZE = 4096


def _use_route_name_cache(app: FastAPI) -> None:
    for index, entry in enumerate(app.user_middleware):
        if entry.cls is PrometheusInstrumentatorMiddleware:
            app.user_middleware[index] = Middleware(_RouteNameCache, *entry.args, **entry.kwargs)


def _last_sync(app: FastAPI):
    from api.maintenance import run_store  # imported late: it pulls in the maintenance actors

    return run_store(app.state.services).last_finished("sync")


def install_observability(app: FastAPI, settings: Settings) -> None:
    """Logging, request ids, HTTP metrics and ``/metrics`` for this app."""
    configure_logging(settings, role="web")
    Instrumentator(
        should_group_status_codes=False,
        should_ignore_untemplated=True,  # scanners' random paths must not explode label cardinality
        excluded_handlers=["/metrics"],
        registry=REGISTRY,
    ).instrument(app)
    _use_route_name_cache(app)
    app.add_middleware(AccessLog)
    app.add_middleware(CorrelationIdMiddleware)  # outermost: everything inside sees the id

    queue_registry = CollectorRegistry(auto_describe=False)
    queue_registry.register(QueueCollector(lambda: app.state.services.broker_redis))
    queue_registry.register(DriftCollector(lambda: _last_sync(app)))
    queue_registry.register(SyncGuardCollector(lambda: app.state.services.broker_redis))
    queue_registry.register(FailedWritesCollector(lambda: app.state.services.broker_redis))
    router = APIRouter(tags=["operations"], dependencies=[] if settings.metrics_public else [ApiAuth])

    @router.get("/metrics", summary="Prometheus metrics (API token unless METRICS_PUBLIC)", include_in_schema=True)
    def metrics() -> Response:
        return Response(generate_latest(REGISTRY) + generate_latest(queue_registry), media_type=CONTENT_TYPE_LATEST)

    app.include_router(router)
