"""A stopping worker gives back the messages a long stage holds, at once and unchanged.

The enrichment stage waits while the write path has work (``pipeline.background``), up to
``SIMILAR_TO_DEFER_MAX_S``; before, a stopping enricher sat out that wait (or its shutdown
timeout) with the messages in hand. Now the wait ends when the worker stops: each message is
sent again as it was (its retry count too) and this delivery acknowledged (``pipeline.stopping``).
"""

from __future__ import annotations

import os
import signal
import time
import uuid

import dramatiq
import pytest
import redis

from ops.bench.stack import Stack, wait_until

pytestmark = pytest.mark.integration

DEFER_MAX_S = 240.0  # how long an enrich message would wait for the write path before running anyway


def _write(api, count: int, tag: str) -> list[str]:
    answer = api.post("/memory/batch", json={"memories": [{"content": f"{tag} memory {n}: Sarah met Rachel in Paris",
                                                          "tags": [tag]} for n in range(count)]})
    assert answer.status_code in (201, 202), answer.text
    return [row["memory_id"] for row in answer.json()["results"]]


def _enrich_messages(client: redis.Redis) -> tuple[int, int, list[dict]]:
    """(messages held by some worker, messages queued, every enrich message's options)."""
    held = sum(client.scard(key) for key in client.scan_iter("mempipe:__acks__.*.enrich"))
    queued = client.llen("mempipe:enrich")
    options = [dramatiq.Message.decode(raw).options for raw in client.hvals("mempipe:enrich.msgs")]
    return held, queued, options


def test_a_stopping_enricher_puts_back_the_messages_it_waits_with(make_stack):
    stack: Stack = make_stack(SIMILAR_TO_DEFER_MAX_S=str(DEFER_MAX_S), SIMILAR_TO_DEFER_BACKLOG="0")
    stack.start_web()
    worker = stack.start_worker(processes=1, threads=2)
    broker = redis.Redis.from_url(stack.redis_url)
    tag = f"putback-{uuid.uuid4().hex[:8]}"
    with stack.client() as api:
        ids = _write(api, 300, tag)
        wait_until(lambda: (lambda h: h["vector_count"] == 300 and h["queues"]["enrich"] > 0)(api.get("/health").json()),
                   timeout=120, message="all recallable, enrichment queued")
        # The write path busy: its worker frozen with a new batch queued, so enrichment waits.
        os.killpg(worker.pid, signal.SIGSTOP)
        try:
            _write(api, 10, tag)
            enricher = stack.start_enrich_worker()
            wait_until(lambda: _enrich_messages(broker)[0] > 0, timeout=60, message="the enricher holding messages")
            time.sleep(1)  # inside the wait, not on their way into it
            assert api.get("/health").json()["queues"]["persist"] > 0

            started = time.monotonic()
            # To the dramatiq command only, as the launcher stops it: it passes the signal on to
            # its worker process (a second SIGTERM of its own would make that one exit at once).
            enricher.send_signal(signal.SIGTERM)
            enricher.wait(DEFER_MAX_S)
            took = time.monotonic() - started
            # Given back, not waited out: the stop did not sit out the wait for the write path.
            assert took < DEFER_MAX_S / 4, took
            held, queued, options = _enrich_messages(broker)
            assert held == 0 and queued == len(options) > 0, (held, queued, len(options))
            assert all(not o.get("retries") for o in options)  # not counted as failed attempts
            assert "message put back on its queue" in stack.read_log("worker")
        finally:
            os.killpg(worker.pid, signal.SIGCONT)

        stack.start_enrich_worker()
        for memory_id in (ids[0], ids[150], ids[-1]):
            wait_until(lambda: api.get(f"/memory/{memory_id}").json()["memory"].get("enriched_at"), timeout=120,
                       message=f"{memory_id} enriched after the restart")
        wait_until(lambda: api.get("/health").json()["queues"]["enrich"] == 0, timeout=120, message="enrich queue empty")
