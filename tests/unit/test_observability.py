"""Request ids through messages, per-actor and store metrics, JSON logs, token redaction."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from pathlib import Path

import dramatiq
import pytest
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import Retries
from prometheus_client import CollectorRegistry

from pipeline.config import Settings
from pipeline.observability.actor_metrics import ActorMetrics
from pipeline.observability.logs import RedactSecrets, TraceContext, configure_logging, redact
from pipeline.observability.metrics import InstrumentedEmbedder, InstrumentedStore, PipelineMetrics
from pipeline.observability.requestid import OPTION, TraceMiddleware, request_id

ROOT = Path(__file__).resolve().parents[2]


def sample(registry: CollectorRegistry, name: str, **labels) -> float:
    value = registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def test_importing_the_actors_leaves_prometheus_client_unimported():
    # A worker process must be able to switch prometheus_client to multiprocess mode at
    # process boot, which only works if nothing imported it earlier.
    code = "import sys, pipeline.actors; sys.exit(1 if 'prometheus_client' in sys.modules else 0)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr or "prometheus_client was imported by pipeline.actors"


@pytest.fixture()
def stub():
    registry = CollectorRegistry()
    metrics = PipelineMetrics(registry)
    broker = StubBroker(middleware=[Retries(max_retries=1, min_backoff=1, max_backoff=1)])
    broker.add_middleware(TraceMiddleware())
    broker.add_middleware(ActorMetrics(Settings(worker_metrics_port=0), metrics=lambda: metrics))
    broker.emit_after("process_boot")
    dramatiq.set_broker(broker)
    worker = dramatiq.Worker(broker, worker_timeout=50)
    worker.start()
    yield broker, worker, registry
    worker.stop()
    broker.close()


def test_request_id_follows_a_message_into_the_messages_it_sends(stub):
    broker, worker, _ = stub
    seen: dict[str, str | None] = {}

    @dramatiq.actor(queue_name="first")
    def first():
        seen["first"] = request_id.get()
        second.send()

    @dramatiq.actor(queue_name="second")
    def second():
        seen["second"] = request_id.get()

    token = request_id.set("req-abc")
    try:
        message = first.send()
    finally:
        request_id.reset(token)
    assert message.options[OPTION] == "req-abc"
    broker.join("first")
    broker.join("second")
    worker.join()
    assert seen == {"first": "req-abc", "second": "req-abc"}
    assert request_id.get() is None  # the worker thread reset it; nothing leaked here either


def test_message_without_request_id_carries_none(stub):
    broker, worker, _ = stub

    @dramatiq.actor(queue_name="plain")
    def plain():
        pass

    assert OPTION not in plain.send().options


def test_actor_metrics_count_processed_errored_retried_rejected(stub):
    broker, worker, registry = stub

    @dramatiq.actor(queue_name="work")
    def ok():
        pass

    @dramatiq.actor(queue_name="work")
    def fails():
        raise RuntimeError("boom")

    ok.send()
    ok.send()
    fails.send()
    broker.join("work", fail_fast=False)
    worker.join()
    labels = {"queue_name": "work"}
    assert sample(registry, "dramatiq_messages_total", actor_name="ok", **labels) == 2
    assert sample(registry, "dramatiq_message_errors_total", actor_name="ok", **labels) == 0
    # one failure, one retry, then the second failure dead-letters it
    assert sample(registry, "dramatiq_messages_total", actor_name="fails", **labels) == 2
    assert sample(registry, "dramatiq_message_errors_total", actor_name="fails", **labels) == 2
    assert sample(registry, "dramatiq_message_retries_total", actor_name="fails", **labels) == 1
    assert sample(registry, "dramatiq_message_rejects_total", actor_name="fails", **labels) == 1
    assert sample(registry, "dramatiq_messages_inprogress", actor_name="ok", **labels) == 0
    assert sample(registry, "dramatiq_message_duration_milliseconds_count", actor_name="ok", **labels) == 2


class FakeStore:
    backend = "fake"

    def upsert(self, points):
        return len(points)

    def broken(self):
        raise ConnectionError("down")


def test_store_calls_are_timed_and_errors_counted():
    registry = CollectorRegistry()
    store = InstrumentedStore(FakeStore(), "vectors", PipelineMetrics(registry))
    assert store.backend == "fake"
    assert store.upsert([1, 2]) == 2
    with pytest.raises(ConnectionError):
        store.broken()
    assert sample(registry, "mempipe_store_operation_seconds_count", store="vectors", operation="upsert") == 1
    assert sample(registry, "mempipe_store_operation_seconds_count", store="vectors", operation="broken") == 1
    assert sample(registry, "mempipe_store_errors_total", store="vectors", operation="broken") == 1


class Estimated:
    name, dimensions, semantic = "hash", 3, False

    def embed(self, texts):
        return [[1.0, 0.0, 0.0] for _ in texts]


class Reported(Estimated):
    name = "openai"

    def embed_with_usage(self, texts):
        return self.embed(texts), 42


def test_embedding_calls_texts_and_tokens():
    registry = CollectorRegistry()
    metrics = PipelineMetrics(registry)
    vectors = InstrumentedEmbedder(Estimated(), metrics).embed(["abcd", "abcdefgh", "a"])
    assert len(vectors) == 3
    assert sample(registry, "mempipe_embedding_calls_total", provider="hash") == 1
    assert sample(registry, "mempipe_embedding_texts_total", provider="hash") == 3
    assert sample(registry, "mempipe_embedding_tokens_total", provider="hash") == 1 + 2 + 1  # 4 chars a token
    InstrumentedEmbedder(Reported(), metrics).embed(["x" * 400])
    assert sample(registry, "mempipe_embedding_tokens_total", provider="openai") == 42


def test_float32_embedding_is_counted_alike():
    import numpy as np

    from pipeline.embedding import HashEmbedder

    registry = CollectorRegistry()
    metrics = PipelineMetrics(registry)
    matrix = InstrumentedEmbedder(Estimated(), metrics).embed_f32(["abcd", "abcdefgh"])  # via embed()
    assert matrix.dtype == np.float32 and matrix.tolist() == [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    assert sample(registry, "mempipe_embedding_texts_total", provider="hash") == 2
    reported = InstrumentedEmbedder(Reported(), metrics).embed_f32(["x"])  # the provider's usage kept
    assert reported.shape == (1, 3) and sample(registry, "mempipe_embedding_tokens_total", provider="openai") == 42
    direct = InstrumentedEmbedder(HashEmbedder(), metrics).embed_f32(["a b c"])  # the provider's own float32 rows
    assert np.allclose(direct[0], HashEmbedder().embed(["a b c"])[0], atol=1e-7)
    assert sample(registry, "mempipe_embedding_calls_total", provider="hash") == 2


@pytest.mark.parametrize("text", [
    "GET /recall?api_key=s3cret&query=x",
    "headers: Authorization: Bearer s3cret",
    "{'x-api-key': 's3cret'}",
    "X-Admin-Token: s3cret",
    "GET /recall?embedding=" + ",".join(["0.12345"] * 400) + "&API_KEY=s3cret",
    "GET /recall?Token=s3cret",
])
def test_redact_masks_tokens(text):
    cleaned = redact(text)
    assert "s3cret" not in cleaned and "***" in cleaned


def test_redact_keeps_other_text():
    assert redact("GET /recall?query=bearer+market&limit=5") == "GET /recall?query=bearer+market&limit=5"


def test_json_log_line_carries_request_id_and_is_redacted():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("mempipe.test.json")
    logger.handlers, logger.propagate = [handler], False
    logger.setLevel(logging.INFO)
    from pythonjsonlogger.json import JsonFormatter

    handler.setFormatter(JsonFormatter(["levelname", "name", "message"], timestamp=True))
    handler.addFilter(TraceContext())
    handler.addFilter(RedactSecrets())
    token = request_id.set("rid-1")
    try:
        logger.info("called %s", "/recall?api_key=abc123", extra={"status": 200})
    finally:
        request_id.reset(token)
    line = json.loads(stream.getvalue())
    assert line["request_id"] == "rid-1" and line["status"] == 200
    assert line["message"] == "called /recall?api_key=***" and "abc123" not in stream.getvalue()


def test_configure_logging_is_idempotent_and_takes_over_uvicorn():
    error_logger = logging.getLogger("uvicorn.error")
    saved_error = (error_logger.handlers[:], error_logger.propagate)
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    uvicorn_logger = logging.getLogger("uvicorn.access")
    saved_uvicorn = (uvicorn_logger.handlers[:], uvicorn_logger.propagate)
    try:
        root.handlers = [logging.StreamHandler(io.StringIO())]
        uvicorn_logger.handlers, uvicorn_logger.propagate = [logging.StreamHandler(io.StringIO())], False
        configure_logging(Settings(), role="web")
        first = root.handlers[0].formatter
        configure_logging(Settings(log_format="text"), role="worker")
        assert root.handlers[0].formatter is first  # the first call wins
        assert uvicorn_logger.handlers == [] and uvicorn_logger.propagate is False  # ours replaces it
        assert logging.getLogger("uvicorn.error").propagate is True
        assert sum(isinstance(f, RedactSecrets) for f in root.handlers[0].filters) == 1
    finally:
        root.handlers, root.level = saved
        uvicorn_logger.handlers, uvicorn_logger.propagate = saved_uvicorn
        error_logger.handlers, error_logger.propagate = saved_error


def test_access_log_records_status_and_a_redacted_shortened_query(caplog):
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from api.observability import LOGGED_QUERY_CHARS, AccessLog

    app = AccessLog(Starlette(routes=[Route("/recall", lambda request: PlainTextResponse("gone", status_code=410))]))
    embedding = ",".join(["0.12345"] * 400)
    with caplog.at_level(logging.INFO, logger="mempipe.access"), TestClient(app) as client:
        client.get(f"/recall?api_key=s3cret&query=x&embedding={embedding}")
        client.get("/recall")
    long_line, bare_line = [r for r in caplog.records if r.name == "mempipe.access"]
    assert long_line.status == 410 and long_line.method == "GET" and long_line.path == "/recall"
    assert long_line.duration_ms >= 0
    assert long_line.query.startswith("api_key=***&query=x&embedding=0.12345")
    assert "s3cret" not in long_line.query
    assert len(long_line.query) < LOGGED_QUERY_CHARS + 30 and long_line.query.endswith(" chars)")
    assert bare_line.query is None and bare_line.status == 410


def test_http_metrics_label_requests_by_route_template_through_the_cache():
    from fastapi import FastAPI
    from prometheus_fastapi_instrumentator import Instrumentator
    from starlette.testclient import TestClient

    from api.observability import _RouteNameCache, _use_route_name_cache

    app = FastAPI()

    @app.get("/items/{item_id}")
    def item(item_id: int):
        return {"id": item_id}

    registry = CollectorRegistry()
    Instrumentator(should_group_status_codes=False, should_ignore_untemplated=True, registry=registry).instrument(app)
    _use_route_name_cache(app)
    assert [m.cls for m in app.user_middleware] == [_RouteNameCache]
    with TestClient(app) as client:
        for path in ("/items/1", "/items/2", "/items/1", "/nowhere"):
            client.get(path)
    assert sample(registry, "http_requests_total", handler="/items/{item_id}", method="GET", status="200") == 3
    assert sample(registry, "http_requests_total", handler="/nowhere", method="GET", status="404") == 0
