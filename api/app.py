"""The FastAPI app: built once per web process, clients created in the lifespan.

In the embedded default (Qdrant Edge) this process owns the Edge shard, so it also runs a
small in-process Dramatiq worker over the vector queue and the shard's index maintenance.
With a Qdrant server it is stateless and consumes nothing.
"""

from __future__ import annotations

import logging
import time
from contextlib import asynccontextmanager
from datetime import datetime, timezone
from functools import partial
from typing import Callable

import dramatiq
import redis.asyncio as aioredis
from fastapi import FastAPI

from api import docs_pages, single_write
from api.access import AccessBatcher
from api.bind import served_bind, unauthenticated_exposure
from api.errors import install_error_handlers
from api.foreground import ForegroundRequests
from api.gc_pause import freeze_start_up_objects
from api.guard import RequestGuard
from api.index_maintainer import BuildHolds, IndexMaintainer
from api.mcp.server import McpEndpoint
from api.observability import install_observability
from api.openapi import install_openapi
from api.querystring import PlainCommas
from api.responses import ORJSONResponse
from api.routes import admin, batch, browse, by_tag, consolidate, enrichment, health, ingest, memory, recall, relations
from api.waiter import CompletionWaiter
from api.writes import Enqueuers, WritePath, WriteTuning
from pipeline.stages import ALL_QUEUES, VECTOR_OWNER_QUEUES
from pipeline.config import Settings, get_settings
from pipeline.embedding import import_provider_libraries, provider_dimensions
from pipeline.errors import ConfigurationError
from pipeline.foreground import Foreground, never_wait
from pipeline.query import RecallEngine
from pipeline.records import Limits
from pipeline.services import Services
from pipeline.stopping import worker_shutdown_ms
from pipeline.store_wait import wait_for_stores

log = logging.getLogger(__name__)


def web_worker_queues(settings: Settings) -> set[str]:
    choice = (settings.web_worker_queues or "").strip().lower()
    if choice == "all":
        return set(ALL_QUEUES)
    if choice == "none":
        return set()
    if choice:
        return {q.strip() for q in choice.split(",") if q.strip()}
    return set(VECTOR_OWNER_QUEUES) if settings.uses_qdrant_edge else set()


def query_side(settings: Settings) -> Settings:
    """The web's settings for its own model: it embeds queries one at a time on the request path,
    beside the workers' batches, so it takes one torch thread unless EMBED_TORCH_THREADS names a
    count (the automatic count gives the cores to the worker processes)."""
    return settings if settings.embed_torch_threads else settings.model_copy(update={"embed_torch_threads": 1})


def _actor_enqueuers(services: Services) -> Enqueuers:
    import pipeline.actors  # noqa: F401  (installs the broker and declares the actors the map sends to)
    from pipeline import stages

    return Enqueuers(
        persist=partial(stages.send, "persist_memories"),
        update=partial(stages.send, "update_memory"),
        delete=partial(stages.send, "delete_memories"),
        access=partial(stages.send, "record_access"),
        link=partial(stages.send, "link_memories"),
        enrich=lambda ids: stages.send_enrich(services, ids),
    )


def recall_engine(settings: Settings, svc: Services, access: AccessBatcher) -> RecallEngine:
    return RecallEngine(
        settings,
        graph=lambda: svc.graph,
        vectors=lambda: svc.vectors,
        embedder=lambda: svc.embedder,
        on_access=lambda ids: access.record(ids, datetime.now(timezone.utc).isoformat()),
        dimensions=lambda: svc.vector_size,
    )


def _not_a_further_worker(record: logging.LogRecord) -> bool:
    return "_WorkerMiddleware" not in record.getMessage()


def quiet_workers_sharing(broker: dramatiq.Broker) -> None:
    """Drop Dramatiq's warning that a further worker adds its own ``_WorkerMiddleware`` to
    ``broker``: every ``Worker`` does, by design, and the web starts one per queue. Other
    duplicate-middleware warnings still show."""
    logger = logging.getLogger(f"dramatiq.broker.{type(broker).__name__}")
    if _not_a_further_worker not in logger.filters:
        logger.addFilter(_not_a_further_worker)


def start_vector_workers(svc: Services, queues: set[str]) -> list[dramatiq.Worker]:
    """In-process workers for the queues this process consumes (the vector queues in the embedded default)."""
    if not queues:
        return []
    import pipeline.actors
    from pipeline.actor_context import use_services

    use_services(pipeline.actors.broker, svc)  # actors in this process share its Edge shard
    # One single-threaded worker per queue, so slower similarity searches never hold
    # up the vector writes that make memories recallable.
    quiet_workers_sharing(pipeline.actors.broker)
    workers = []
    for queue in sorted(queues):
        worker = dramatiq.Worker(pipeline.actors.broker, queues={queue}, worker_threads=1)
        worker.start()
        workers.append(worker)
    return workers


@asynccontextmanager
async def web_lifespan(
    app: FastAPI,
    settings: Settings,
    mcp: McpEndpoint,
    services: Services | None = None,
    enqueuers: Enqueuers | None = None,
    redis_connect: Callable[[], aioredis.Redis] | None = None,
    foreground: Foreground | None = None,
):
    """The web process's life: open the stores and start its helpers, serve, stop them in reverse."""
    if services is None:  # its own stores: they may be loading still (started beside this process)
        import_provider_libraries(settings)  # meanwhile
        # Which collection is live, and the Edge shard's owner record, are in the broker. The
        # graph is needed only later: building the model and opening the shard overlap its
        # load, the longest part of a restart at a million memories.
        wait_for_stores(settings, ("broker",))
    svc = services or Services(query_side(settings), give_way=foreground.give_way if foreground else never_wait)
    embedder = svc.embedder  # load the model now, not on the first recall
    svc.vectors  # open the Edge shard / check the collection: a size mismatch stops start-up here
    if services is None:
        wait_for_stores(settings, ("graph",))
    svc.settle_content_fulltext()  # the graph indexes content only where keyword search reads it there
    app.state.settings = settings
    app.state.services = svc
    app.state.foreground = foreground
    app.state.limits = Limits.from_settings(settings, embedder.dimensions)
    waiter = CompletionWaiter(redis_connect or (lambda: aioredis.Redis.from_url(settings.redis_url)))
    await waiter.start()
    writes = WritePath(svc.tracker, enqueuers or _actor_enqueuers(svc), waiter, WriteTuning.from_settings(settings))
    app.state.writes = writes
    access = AccessBatcher(writes.record_access, settings.recall_access_flush_ms / 1000)
    access.start()
    engine = app.state.engine = recall_engine(settings, svc, access)
    workers = start_vector_workers(svc, web_worker_queues(settings))
    maintainer = IndexMaintainer(svc, settings.edge_optimize_interval_s, BuildHolds.from_settings(settings),
                                 flush_interval=settings.edge_flush_interval_s,
                                 page_cache_refresh_s=settings.edge_page_cache_refresh_s)
    maintainer.start()
    if settings.web_gc_freeze:
        freeze_start_up_objects()  # last of the start-up: everything built so far is frozen
    try:
        async with mcp.run():
            yield
    finally:
        maintainer.stop()
        # First of all: a process killed later in its stop (a worker thread that outlasts the
        # launcher's budget) would otherwise leave every write since the last flush to be
        # replayed at the next start.
        maintainer.persist()
        access.stop()  # the last batch of last_accessed updates goes out before the broker closes
        engine.close()
        stop_workers(workers, worker_shutdown_ms(settings.embedded_stop_timeout_s))
        await waiter.stop()
        svc.close()


def stop_workers(workers: list[dramatiq.Worker], budget_ms: int) -> None:
    """Stop the in-process workers together within ``budget_ms`` (``pipeline.stopping``)."""
    deadline = time.monotonic() + budget_ms / 1000
    for worker in workers:  # no new message once asked, so all of them are asked first
        for thread in worker.workers:
            thread.stop()
    for worker in workers:
        worker.stop(timeout=max(0, int((deadline - time.monotonic()) * 1000)))


def install_middleware(app: FastAPI, settings: Settings, foreground: Foreground | None = None) -> None:
    # Added before the observability middleware, so inside it: single writes are logged,
    # counted and traced like every request, then answered ahead of FastAPI's routing.
    app.add_middleware(single_write.SingleWriteFastPath)
    # Outside the fast path, so POST /memory is guarded like every route; inside
    # observability, so refused requests are logged and counted.
    app.add_middleware(RequestGuard, settings=settings,
                       upload_types={ingest.SLACK_IMPORT_PATH: ingest.SLACK_UPLOAD_TYPES})
    install_observability(app, settings)
    if foreground is not None:
        # Outside observability: a recall is in flight from its arrival, logging included.
        app.add_middleware(ForegroundRequests, foreground=foreground)
    app.add_middleware(PlainCommas)  # outermost: every layer (the access log too) sees plain commas


def include_routes(app: FastAPI, settings: Settings) -> McpEndpoint:
    """Every route, in matching order; returns the MCP endpoint (its session manager runs in the lifespan)."""
    app.include_router(health.router)
    app.include_router(batch.router)  # before memory: /memory/batch is not a memory id
    app.include_router(browse.router)  # before memory: GET /memory/by-tag is not /memory/{id}
    app.include_router(by_tag.router)  # DELETE /memory/by-tag, likewise before memory
    app.include_router(single_write.router)  # POST /memory (answered by its fast path)
    app.include_router(memory.router)
    app.include_router(recall.router)
    app.include_router(ingest.router)
    app.include_router(consolidate.router)
    app.include_router(admin.router)
    # MCP: the tools call the routes above in-process, with the caller's token.
    mcp = McpEndpoint(settings, app)
    app.add_route("/mcp", mcp.asgi, methods=["GET", "POST", "DELETE"], include_in_schema=False)
    app.include_router(relations.router)
    app.include_router(enrichment.router)
    return mcp


def create_app(
    settings: Settings | None = None,
    services: Services | None = None,
    enqueuers: Enqueuers | None = None,
    redis_connect: Callable[[], aioredis.Redis] | None = None,
) -> FastAPI:
    """Build the app. Tests may pass ready-made services, enqueuers and a redis factory."""
    settings = settings or get_settings()
    # Before anything is built or connected: a refused start leaves nothing behind.
    refusal = unauthenticated_exposure(served_bind(settings), settings)
    if refusal:
        raise ConfigurationError(f"refusing to start: {refusal}")
    # Recalls and /health in flight, which the web's own vector work waits for (pipeline.foreground).
    foreground = Foreground(settings.web_background_yield_max_ms / 1000)
    app = FastAPI(
        title="mempipe",
        version="0.1.0",
        description="Long-term memory for AI agents, AutoMem-compatible, on an event-driven pipeline.",
        default_response_class=ORJSONResponse,
        # ``mcp`` is made below, with the app its tools call into; the lifespan runs only once served.
        lifespan=lambda app: web_lifespan(app, settings, mcp, services, enqueuers, redis_connect, foreground),
        # FastAPI's own schema and pages are open to anyone; api.docs_pages serves them behind the token.
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
    )
    install_error_handlers(app)
    install_middleware(app, settings, foreground)
    mcp = include_routes(app, settings)
    install_openapi(app, settings, lambda: provider_dimensions(settings))
    app.include_router(docs_pages.router)
    return app
