"""Which messages are writes, and how long a failing one is retried (the marking itself needs
Redis scripts: tests/integration/test_write_failures.py)."""

from __future__ import annotations

import pytest
import redis

from pipeline.config import Settings
from pipeline.errors import ValidationError
from pipeline.retry_policy import is_unavailable, retries_for_window, retry_when
from pipeline.write_failures import memory_ids

pytestmark = pytest.mark.security  # pytest -m security: the security suite (docs/testing.md)


def test_memory_ids_of_write_messages():
    assert memory_ids("persist_memories", ([{"id": "x", "content": "…"}, {"id": "y"}],)) == ["x", "y"]
    assert memory_ids("index_vectors", [[{"id": "z", "op": "store"}]]) == ["z"]
    assert memory_ids("delete_memories", (["x"],)) == [] and memory_ids("persist_memories", ()) == []


def test_connection_errors_get_a_longer_retry_window_than_bad_data():
    settings = Settings(actor_max_retries=12, retry_min_backoff_ms=250, retry_max_backoff_ms=60_000,
                        actor_unavailable_retry_seconds=3600)
    allowed = retry_when(settings)
    assert is_unavailable(redis.ConnectionError()) and is_unavailable(TimeoutError()) and not is_unavailable(ValidationError("x"))
    assert not is_unavailable(OSError("[E050] Can't find model"))  # a missing model is not an outage
    assert allowed(11, ValidationError("bad")) and not allowed(12, ValidationError("bad"))
    outage = retries_for_window(3600, 250, 60_000)
    assert outage > 12 and allowed(outage - 1, redis.ConnectionError()) and not allowed(outage, redis.ConnectionError())
    # the window is a lower bound: even with the largest jitter the backoff adds up to an hour
    assert sum(min(250 * 2 ** n, 60_000) / 2 for n in range(outage)) >= 3_600_000
    # a short window never gives an outage fewer retries than bad data
    assert not retry_when(Settings(actor_max_retries=5, actor_unavailable_retry_seconds=0))(5, redis.ConnectionError())
    assert retry_when(Settings(actor_max_retries=5, actor_unavailable_retry_seconds=0))(4, redis.ConnectionError())
