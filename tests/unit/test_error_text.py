"""A store's error text (hosts, ports) reaches the log, never an answer."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from types import SimpleNamespace

import orjson
import pytest
import redis

from api.routes.health import health
from api.writes import Enqueuers, WritePath, WriteTuning
from pipeline.config import Settings
from pipeline.errors import Unavailable
from tests.unit.test_single_write import _client

pytestmark = pytest.mark.security  # pytest -m security: the security suite (docs/testing.md)

ADDRESS = "10.9.8.7:16379"


def _refused(*_args, **_kwargs):
    raise redis.ConnectionError(f"Error 111 connecting to {ADDRESS}. Connection refused.")


class DownTracker:
    inflight_count = mark_queued = staticmethod(_refused)


def _writes() -> WritePath:
    enqueue = Enqueuers(persist=_refused, update=_refused, delete=_refused, access=_refused, enrich=_refused)
    return WritePath(DownTracker(), enqueue, waiter=None, tuning=replace(WriteTuning.from_settings(Settings()), coalesce_window_s=0))


@pytest.mark.parametrize("call", [
    lambda w: w.admit(),
    lambda w: w.store_many([SimpleNamespace(to_message=lambda: {"id": "m1"})]),
    lambda w: w.reprocess(["m1"]),
])
def test_broker_failures_answer_without_the_address(call, caplog):
    with caplog.at_level(logging.WARNING), pytest.raises(Unavailable) as raised:
        asyncio.run(call(_writes()))
    assert raised.value.message.startswith("the queue broker is unreachable; nothing was")
    assert ADDRESS not in raised.value.message
    assert ADDRESS in caplog.text


def test_a_single_write_503_is_the_envelope_without_the_address(caplog):
    client = _client(_writes())
    with caplog.at_level(logging.WARNING):
        response = client.post("/memory", json={"content": "x"}, headers={"Authorization": "Bearer right-token"})
    assert response.status_code == 503 and response.json()["status"] == "error"
    assert ADDRESS not in response.text and ADDRESS in caplog.text


def test_open_health_names_the_failure_kind_only(caplog):
    down = SimpleNamespace(count_memories=_refused, describe=_refused)
    services = SimpleNamespace(
        settings=Settings(), broker_redis=SimpleNamespace(pipeline=_refused), graph=down, vectors=down,
        collections=down, embedder=SimpleNamespace(name="hash", dimensions=8, semantic=False),
    )
    with caplog.at_level(logging.WARNING):
        response = health(services)
    body = orjson.loads(response.body)
    assert response.status_code == 503 and body["broker_error"] == "ConnectionError"
    assert ADDRESS not in response.body.decode() and ADDRESS in caplog.text
