"""The pending-state tracker on the real broker redis: batch calls, one done message per batch."""

from __future__ import annotations

import asyncio

import orjson
import pytest
import redis
import redis.asyncio as aioredis

from api.waiter import CompletionWaiter
from pipeline.tracking import DONE_CHANNEL, EMBEDDED, RECALLABLE, PipelineTracker

pytestmark = pytest.mark.integration


@pytest.fixture()
def broker_url(servers):
    url = f"redis://127.0.0.1:{servers.broker.port}/{1000}"  # a database no stack uses
    redis.Redis.from_url(url).flushdb()
    return url


def test_advance_and_finish_work_per_batch(broker_url):
    client = redis.Redis.from_url(broker_url)
    tracker = PipelineTracker(client)
    tracker.mark_queued([{"id": i, "content": i} for i in ("a", "b", "c")])
    tracker.finish(["c"], "store", RECALLABLE)
    pubsub = client.pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(DONE_CHANNEL)
    tracker.advance(["a", "b", "c"], EMBEDDED)  # one script call for all three
    assert tracker.pending("a")["state"] == EMBEDDED and tracker.pending("b")["state"] == EMBEDDED
    assert tracker.pending("c") is None  # finished stays finished: no resurrected hash
    tracker.finish(["a", "b"], "store", RECALLABLE)
    assert tracker.inflight_count() == 0
    # Channels span databases: other stacks on this server publish here too.
    ours = None
    for _ in range(50):
        message = pubsub.get_message(timeout=0.1)
        if message and orjson.loads(message["data"]).get("ids") == ["a", "b"]:
            ours = orjson.loads(message["data"])
            break
    assert ours == {"ids": ["a", "b"], "op": "store", "state": RECALLABLE}


def test_waiter_wakes_every_id_of_a_batch_message(broker_url):
    async def scenario():
        waiter = CompletionWaiter(lambda: aioredis.Redis.from_url(broker_url))
        await waiter.start()
        try:
            futures = {m: waiter.expect(m) for m in ("x", "y")}
            PipelineTracker(redis.Redis.from_url(broker_url)).finish(["x", "y"], "store", RECALLABLE)
            return [await waiter.wait(m, f, 5) for m, f in futures.items()]
        finally:
            await waiter.stop()

    events = asyncio.run(scenario())
    assert events == [{"id": "x", "op": "store", "state": RECALLABLE}, {"id": "y", "op": "store", "state": RECALLABLE}]


def test_queued_writes_mark_arrivals_that_expire_on_the_broker(broker_url):
    client = redis.Redis.from_url(broker_url)
    tracker = PipelineTracker(client, arrival_window_ms=300)
    assert not tracker.writes_arriving()
    tracker.mark_queued([{"id": "w1", "content": "x"}])
    assert tracker.writes_arriving()
    assert 0 < client.pttl("mempipe:arriving") <= 300
    silent = PipelineTracker(client, arrival_window_ms=0)  # 0: arrivals are not recorded
    client.delete("mempipe:arriving")
    silent.mark_queued([{"id": "w2", "content": "y"}])
    assert not silent.writes_arriving()


def test_mark_queued_is_one_script_call_with_the_same_effects(broker_url):
    client = redis.Redis.from_url(broker_url)
    tracker = PipelineTracker(client, arrival_window_ms=0)
    tracker.tombstone(["q1", "q3"])
    tracker.mark_queued([{"id": "q1", "content": "one"}, {"id": "q2", "content": "two"}], clear_tombstones=True)
    assert tracker.tombstoned(["q1", "q2", "q3"]) == {"q3"}  # only the queued ones' tombstones cleared
    assert tracker.pending("q1") == {"state": "queued", "record": {"id": "q1", "content": "one"}}
    assert client.sismember("mempipe:inflight", "q2")
    tracker.mark_queued([{"id": "q3", "content": "three"}])  # a plain write: the tombstone stays
    assert tracker.tombstoned(["q3"]) == {"q3"}
    many = [{"id": f"bulk{i}", "content": str(i)} for i in range(2500)]  # past the script's chunk of 1000
    tracker.mark_queued(many, clear_tombstones=True)
    assert all(client.smismember("mempipe:inflight", [m["id"] for m in many]))
    tracker.mark_queued([])  # nothing: no call
    tracker.finish([m["id"] for m in many] + ["q1", "q2", "q3"], "store", "recallable")
    assert tracker.inflight_count() == 0


def test_in_pipeline_names_the_memories_with_a_pending_record_in_one_call(broker_url):
    client = redis.Redis.from_url(broker_url)
    tracker = PipelineTracker(client, arrival_window_ms=0)
    tracker.mark_queued([{"id": f"ip{i}", "content": str(i)} for i in range(3)])
    tracker.finish(["ip1"], "store", "recallable")
    asked = [f"ip{i}" for i in range(4)]  # ip3 was never written
    assert tracker.in_pipeline(asked) == {"ip0", "ip2"}
    assert tracker.in_pipeline([]) == set()
    tracker.finish(["ip0", "ip2"], "store", "recallable")
    assert tracker.in_pipeline(asked) == set()
