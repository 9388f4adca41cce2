"""A write that exhausts its retries is marked failed, leaves the backlog, and can be replayed."""

from __future__ import annotations

import itertools

import pytest
import redis
from dramatiq import Message
from dramatiq.broker import MessageProxy

from pipeline.tracking import FAILED, PipelineTracker
from pipeline.write_failures import WriteFailures

pytestmark = [pytest.mark.integration, pytest.mark.security]
_databases = itertools.count(900)  # far above the stacks' databases on the shared broker


@pytest.fixture()
def client(servers):
    client = redis.Redis(port=servers.broker.port, db=next(_databases))
    client.flushdb()
    yield client
    client.flushdb()


def _tracker_with(client, ids):
    tracker = PipelineTracker(client)
    tracker.mark_queued([{"id": m, "content": f"c {m}"} for m in ids])
    return tracker


def test_failed_writes_leave_the_backlog_with_their_reason_and_come_back_on_replay(client):
    tracker = _tracker_with(client, ["a", "b", "c"])
    assert tracker.inflight_count() == 3
    assert tracker.mark_failed(["a", "b", "gone"], "persist_memories failed: ConnectionError") == 2  # no hash, no mark
    assert tracker.inflight_count() == 1 and tracker.failed_count() == 2
    failed = tracker.pending("a")
    assert failed["state"] == FAILED and "ConnectionError" in failed["reason"] and failed["record"]["content"] == "c a"
    tracker.mark_replayed(["a"])
    assert tracker.pending("a")["state"] == "queued" and "reason" not in tracker.pending("a")
    assert tracker.inflight_count() == 2 and tracker.failed_count() == 1
    tracker.finish(["a", "b"], "store", "recallable")  # a finish clears a failure too
    assert tracker.failed_count() == 0 and tracker.inflight_count() == 1
    assert not client.exists("mempipe:pending:b")


def test_a_failed_mark_never_resurrects_a_finished_write(client):
    tracker = _tracker_with(client, ["a"])
    tracker.finish(["a"], "store", "recallable")
    assert tracker.mark_failed(["a"], "late") == 0
    assert tracker.pending("a") is None and tracker.failed_count() == 0 and tracker.inflight_count() == 0
    tracker.mark_replayed(["a"])
    assert tracker.inflight_count() == 0


def _proxy(actor: str, args, retries: int = 12, failed: bool = True) -> MessageProxy:
    proxy = MessageProxy(Message(queue_name="persist", actor_name=actor, args=args, kwargs={},
                                 options={"retries": retries}))
    if failed:
        proxy.fail()
    return proxy


class _Broker:
    def __init__(self, client):
        self.client = client


def test_the_middleware_marks_only_write_messages_that_failed_for_good(client):
    tracker = _tracker_with(client, ["a", "b"])
    broker, middleware = _Broker(client), WriteFailures()
    error = redis.ConnectionError("graph down")
    middleware.after_process_message(broker, _proxy("persist_memories", ([{"id": "a"}],), failed=False), exception=error)
    assert tracker.failed_count() == 0  # still retrying
    middleware.after_process_message(broker, _proxy("record_access", (["a"], "now")), exception=error)
    assert tracker.failed_count() == 0  # not a write
    middleware.after_process_message(broker, _proxy("embed_memories", ([{"id": "a"}, {"id": "b"}],)), exception=error)
    assert tracker.failed_count() == 2 and tracker.inflight_count() == 0
    assert "embed_memories on persist failed after 12 attempts: ConnectionError: graph down" == tracker.pending("b")["reason"]


def test_a_graph_outage_past_the_retry_window_fails_writes_frees_the_backlog_and_replay_stores_them(make_stack, tmp_path):
    from ops.redis_servers import RedisServer, free_port
    from ops.bench.stack import ADMIN_TOKEN, wait_until

    graph = RedisServer("graph", free_port(), tmp_path / "graph", with_falkordb=True)
    graph.start()
    try:
        stack = make_stack(graph_port=graph.port, ACTOR_MAX_RETRIES="2", ACTOR_UNAVAILABLE_RETRY_SECONDS="2",
                           RETRY_MIN_BACKOFF_MS="100", RETRY_MAX_BACKOFF_MS="500", BACKPRESSURE_MAX_PENDING="3",
                           BACKPRESSURE_CHECK_INTERVAL_MS="0")
        stack.start_web()
        stack.start_worker(processes=1, threads=2)
        with stack.client() as api:
            first = api.post("/memory", json={"content": "before the outage"})
            assert first.status_code in (201, 202), first.text
            wait_until(lambda: api.get("/health").json()["vector_count"] == 1, message="first memory stored")

            graph.stop()
            accepted, refused = [], None
            for i in range(10):
                response = api.post("/memory", params={"wait": "false"}, json={"content": f"during the outage {i}"})
                if response.status_code == 429:
                    refused = response
                    break
                assert response.status_code == 202, response.text
                accepted.append(response.json()["memory_id"])
            assert refused is not None and len(accepted) == 4  # refused once more than 3 are behind, while they retry

            def failed(memory_id):
                body = api.get(f"/memory/{memory_id}").json()
                return body if body.get("state") == "failed" else None

            for memory_id in accepted:
                body = wait_until(lambda: failed(memory_id), timeout=90, message="write marked failed")
                assert body["status"] == "failed" and "ConnectionError" in body["reason"], body
                assert body["memory"]["content"].startswith("during the outage")
            health = api.get("/health").json()
            assert health["failed_writes"] == 4 and health["dead_letter_count"] >= 1, health
            metrics = api.get("/metrics").text
            assert "mempipe_failed_writes 4.0" in metrics.splitlines()
            # out of the backlog: writing is possible again
            late = api.post("/memory", params={"wait": "false"}, json={"content": "after the failures"})
            assert late.status_code == 202, late.text
            accepted.append(late.json()["memory_id"])

            graph.start()
            def replayed() -> bool:
                api.post("/admin/deadletters/replay", headers={"X-Admin-Token": ADMIN_TOKEN}, json={})
                return all(api.get(f"/memory/{m}").status_code == 200 for m in accepted)

            wait_until(replayed, timeout=90, interval=1, message="replayed writes stored")
            wait_until(lambda: (h := api.get("/health").json())["failed_writes"] == 0 and h["vector_count"] == 6,
                       timeout=60, message="nothing failed, everything recallable")
            assert "mempipe_failed_writes 0.0" in api.get("/metrics").text.splitlines()
    finally:
        graph.stop()
