"""Write-path consumers wait on a wake list instead of polling (fakeredis for the list), and a
dead worker's messages are handed back by a periodic round rather than by frequent fetches."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import fakeredis
import pytest

from pipeline.broker import MempipeBroker, build_broker
from pipeline.stages import EMBED_QUEUE, HOT_QUEUES, PERSIST_QUEUE
from pipeline.config import Settings
from pipeline.errors import ConfigurationError
from pipeline.redelivery import MAINTAIN_COMMAND, PeriodicRedelivery, maintenance_interval_s, redelivery_bound_s
from pipeline.wakeups import TOKENS_KEPT, WakeConsumers, WakingConsumer, blocking_wait, wake, wake_key


class ScriptedConsumer:
    """An inner consumer whose fetches return what the test queued (None: the queue is empty)."""

    def __init__(self, results):
        self.results = list(results)
        self.fetches = 0
        self.acked = []

    def __next__(self):
        self.fetches += 1
        return self.results.pop(0) if self.results else None

    def ack(self, message):
        self.acked.append(message)


def test_a_miss_waits_for_a_token_and_a_hit_does_not_wait():
    client = fakeredis.FakeRedis()
    inner = ScriptedConsumer(["m1", None, "m2"])
    consumer = WakingConsumer(inner, blocking_wait(client, "ns", "persist", timeout_s=5))
    started = time.monotonic()
    assert next(consumer) == "m1"  # a hit returns at once
    assert time.monotonic() - started < 1

    threading.Timer(0.2, wake, (client, "ns", "persist")).start()
    started = time.monotonic()
    assert next(consumer) is None  # the miss waited for the token, not the 5 s timeout
    assert 0.15 < time.monotonic() - started < 3
    assert next(consumer) == "m2" and inner.fetches == 3


def test_without_a_token_the_wait_ends_at_the_timeout():
    client = fakeredis.FakeRedis()
    consumer = WakingConsumer(ScriptedConsumer([None]), blocking_wait(client, "ns", "embed", timeout_s=0.3))
    started = time.monotonic()
    assert next(consumer) is None
    assert 0.25 < time.monotonic() - started < 3


def test_acks_and_other_attributes_are_the_inner_consumers():
    inner = ScriptedConsumer([])
    inner.outstanding_message_count = 3
    consumer = WakingConsumer(inner, lambda: None)
    consumer.ack("m")
    assert inner.acked == ["m"] and consumer.outstanding_message_count == 3


def test_a_consumer_holding_its_whole_prefetch_waits_for_an_ack_not_for_a_token():
    inner = ScriptedConsumer([None, "m2"])
    inner.prefetch, inner.outstanding_message_count = 1, 1
    waits = []
    consumer = WakingConsumer(inner, lambda: waits.append("token") or True, full_wait_s=5)

    def worker_thread_acks():
        inner.outstanding_message_count = 0
        consumer.ack("m1")

    threading.Timer(0.2, worker_thread_acks).start()
    started = time.monotonic()
    assert next(consumer) is None
    assert 0.15 < time.monotonic() - started < 3  # the ack ended the wait, not its 5 s bound
    assert waits == []  # a token could not have let it fetch: the wake list was left alone
    assert next(consumer) == "m2" and inner.acked == ["m1"]


def test_a_full_consumer_looks_again_after_its_bound_when_no_ack_comes():
    inner = ScriptedConsumer([None])
    inner.prefetch, inner.outstanding_message_count = 2, 2
    consumer = WakingConsumer(inner, lambda: pytest.fail("waited on the wake list"), full_wait_s=0.2)
    started = time.monotonic()
    assert next(consumer) is None
    assert 0.15 < time.monotonic() - started < 3


def test_the_embed_queue_is_consumed_one_message_at_a_time_and_others_keep_their_prefetch():
    broker = MempipeBroker(hot_poll_ms=100, client=fakeredis.FakeRedis(), namespace="ns", middleware=[])
    assert broker.consume(EMBED_QUEUE, prefetch=8).inner.prefetch == 1
    assert broker.consume(PERSIST_QUEUE, prefetch=8).inner.prefetch == 8


def test_enqueues_on_hot_queues_leave_a_few_tokens_and_delayed_ones_none():
    client = fakeredis.FakeRedis()
    broker = SimpleNamespace(client=client, namespace="ns")
    middleware = WakeConsumers({"persist"})
    for _ in range(TOKENS_KEPT + 5):
        middleware.after_enqueue(broker, SimpleNamespace(queue_name="persist"), None)
    middleware.after_enqueue(broker, SimpleNamespace(queue_name="persist.DQ"), 5000)  # to the delay queue
    middleware.after_enqueue(broker, SimpleNamespace(queue_name="enrich"), None)  # not a waking queue
    assert client.llen(wake_key("ns", "persist")) == TOKENS_KEPT
    assert not client.exists(wake_key("ns", "persist.DQ")) and not client.exists(wake_key("ns", "enrich"))


def test_the_broker_wraps_hot_queues_only():
    broker = MempipeBroker(hot_poll_ms=100, client=fakeredis.FakeRedis(), namespace="ns", middleware=[])
    for queue in HOT_QUEUES:
        assert isinstance(broker.consume(queue), WakingConsumer)
    assert not isinstance(broker.consume("enrich"), WakingConsumer)
    assert not isinstance(broker.consume("persist.DQ"), WakingConsumer)


def test_the_wait_must_stay_well_below_the_heartbeat_timeout():
    Settings(queue_poll_ms=500, heartbeat_timeout_ms=2000)
    with pytest.raises(ConfigurationError, match="QUEUE_POLL_MS"):
        Settings(queue_poll_ms=600, heartbeat_timeout_ms=2000)


def test_a_consumer_woken_during_a_stream_lingers_and_one_woken_at_idle_does_not():
    now = [100.0]
    slept = []
    wakes = iter([True, True, False])
    inner = ScriptedConsumer(["m1", None, None, None])
    consumer = WakingConsumer(inner, lambda: next(wakes), linger_s=0.005, stream_s=0.05,
                              clock=lambda: now[0], sleep=slept.append)
    assert next(consumer) == "m1"
    now[0] += 0.01
    assert next(consumer) is None and slept == [0.005]  # woken 10 ms after a message: lets more queue
    now[0] += 1.0
    assert next(consumer) is None and slept == [0.005]  # woken after a second of quiet: fetches at once
    now[0] -= 0.99
    assert next(consumer) is None and slept == [0.005]  # the wait timed out: no token, no linger


class CountingBroker:
    def __init__(self):
        self.rounds = 0
        self.ran = threading.Event()

    def maintain(self):
        self.rounds += 1
        self.ran.set()


def _within(seconds: float, condition) -> bool:
    """Whether ``condition`` holds within ``seconds`` (checked every millisecond)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def test_one_redelivery_thread_serves_every_worker_of_a_process_until_the_last_stops():
    middleware = PeriodicRedelivery(interval_s=0.01)
    broker = CountingBroker()
    middleware.after_worker_boot(broker, "vectors worker")
    middleware.after_worker_boot(broker, "similarity worker")
    assert broker.ran.wait(2)
    assert [t.name for t in threading.enumerate()].count("redelivery") == 1
    middleware.before_worker_shutdown(broker, "vectors worker")
    rounds = broker.rounds
    assert _within(2, lambda: broker.rounds > rounds)  # still running for the other worker
    middleware.before_worker_shutdown(broker, "similarity worker")
    assert _within(2, lambda: "redelivery" not in [t.name for t in threading.enumerate()])  # and then stopped


def test_the_maintain_command_always_runs_maintenance_and_others_keep_dramatiqs_chance():
    broker = MempipeBroker(url="redis://127.0.0.1:1/0", hot_poll_ms=100, maintenance_chance=0)
    assert broker._should_do_maintenance(MAINTAIN_COMMAND) == 1
    assert broker._should_do_maintenance("fetch") == 0


def test_the_redelivery_bound_is_the_heartbeat_timeout_a_round_and_a_fetch():
    assert maintenance_interval_s(15_000) == 3.75
    assert redelivery_bound_s(15_000, 1000) == 15 + 3.75 + 1
    assert any(isinstance(m, PeriodicRedelivery) and m.interval_s == 3.75
               for m in build_broker(Settings(heartbeat_timeout_ms=15_000)).middleware)


def test_the_stage_time_limit_comes_from_its_setting():
    from dramatiq.middleware import TimeLimit

    limits = [m.time_limit for m in build_broker(Settings(actor_time_limit_s=1800)).middleware if isinstance(m, TimeLimit)]
    assert limits == [1_800_000]
    assert [m.time_limit for m in build_broker(Settings()).middleware if isinstance(m, TimeLimit)] == [600_000]
