"""What the broker promises without frequent fetches: a dead worker's messages, delayed
messages, retries and dead letters, each within its bound at idle.

In-process brokers (``pipeline.broker.build_broker``) and Dramatiq workers over the session's
real redis-server; a "dead" worker is a broker that fetched messages and then went silent,
which is what a SIGKILLed process leaves in Redis (its ack set and a stale heartbeat).
"""

from __future__ import annotations

import math
import threading
import time

import dramatiq
import pytest

from ops.bench.stack import wait_until
from pipeline import deadletters
from pipeline.broker import COLD_POLL_MS, NAMESPACE, build_broker
from pipeline.config import Settings
from pipeline.redelivery import redelivery_bound_s

pytestmark = pytest.mark.integration

HEARTBEAT_TIMEOUT_MS = 2000
QUEUE_POLL_MS = 100
# The longest any idle consumer of ours waits between fetches (the cold queues back off to this).
FETCH_WAIT_MS = max(QUEUE_POLL_MS, COLD_POLL_MS)
BOUND_S = redelivery_bound_s(HEARTBEAT_TIMEOUT_MS, FETCH_WAIT_MS)
# Dramatiq's consumer of a cold queue sleeps 5 ms after its first empty fetch and doubles that
# (with jitter) after every further one, up to COLD_POLL_MS: from this many misses in a row on,
# each of its waits is its longest.
LONGEST_WAIT_MISSES = math.ceil(math.log2(COLD_POLL_MS / 5)) + 1


@pytest.fixture()
def settings(make_stack):
    stack = make_stack()  # reserves a broker database of its own; nothing of the stack is started
    return Settings(
        redis_url=stack.redis_url,
        heartbeat_timeout_ms=HEARTBEAT_TIMEOUT_MS,
        queue_poll_ms=QUEUE_POLL_MS,
        retry_min_backoff_ms=100,
        retry_max_backoff_ms=200,
        worker_metrics_port=0,
    )


class Recorder:
    """A Dramatiq actor on one broker that records every call; ``fail_first`` calls raise."""

    def __init__(self, broker, queue: str, *, fail_first: int = 0):
        self.calls: list[tuple[int, float]] = []
        self._failures_left = fail_first
        self._lock = threading.Lock()

        def record(n: int) -> None:
            with self._lock:
                self.calls.append((n, time.monotonic()))
                if self._failures_left > 0:
                    self._failures_left -= 1
                    raise RuntimeError("failing on purpose")

        self.actor = dramatiq.actor(record, broker=broker, actor_name="record", queue_name=queue)

    def numbers(self) -> list[int]:
        with self._lock:
            return sorted(n for n, _ in self.calls)


def run_worker(broker, queue: str) -> dramatiq.Worker:
    worker = dramatiq.Worker(broker, queues={queue}, worker_threads=1)
    worker.start()
    return worker


def wait_backed_off(worker: dramatiq.Worker) -> None:
    """Until every cold consumer of ``worker`` (its delay queue's, a cold queue's) is in its
    longest wait between fetches: the worst moment for a message to arrive. The write-path
    consumers wait on their wake lists for QUEUE_POLL_MS from the first miss on."""
    def cold_consumers():
        consumers = [thread.consumer for thread in worker.consumers.values()]
        return None if None in consumers else [c for c in consumers if not hasattr(c, "inner")]

    wait_until(lambda: (cold := cold_consumers()) and all(c.misses >= LONGEST_WAIT_MISSES for c in cold),
               timeout=10 * COLD_POLL_MS / 1000, interval=0.02, message="cold consumers in their longest wait")


def take_and_die(settings: Settings, queue: str, count: int) -> None:
    """Another process's broker fetches ``count`` messages from ``queue`` and never acks them."""
    dead = build_broker(settings)
    taken = 0
    deadline = time.monotonic() + 10
    # the fetch command itself, as a consumer's prefetch or a drain runs it (the embed queue's
    # consumers prefetch one message at a time)
    while taken < count and time.monotonic() < deadline:
        taken += sum(1 for data in dead.do_fetch(queue, count - taken) if data is not None)
    assert taken == count, f"the dying broker took {taken} of {count} messages"
    key = f"{NAMESPACE}:__acks__.{dead.broker_id}.{queue}"
    assert dead.client.scard(key) == count  # held, unacknowledged: what a SIGKILL leaves behind
    dead.client.close()


@pytest.mark.parametrize("queue", ["persist", "enrich", "persist.DQ"])
def test_a_dead_workers_messages_are_redelivered_within_the_bound_at_idle(settings, queue):
    live = build_broker(settings)
    base_queue = queue.removesuffix(".DQ")
    recorder = Recorder(live, base_queue)
    for n in range(5):
        # Delayed by a little, the message sits in the delay queue until its eta.
        recorder.actor.send_with_options(args=(n,), delay=200 if queue.endswith(".DQ") else None)
    take_and_die(settings, queue, 5)
    killed_at = time.monotonic()
    worker = run_worker(live, base_queue)  # idle: nothing else is sent from here on
    try:
        wait_until(lambda: len(recorder.calls) >= 5, timeout=2 * BOUND_S, interval=0.05,
                   message=f"the dead worker's 5 messages on {queue} redelivered")
        took = max(at for _, at in recorder.calls) - killed_at
        assert took <= 2 * BOUND_S
        time.sleep(FETCH_WAIT_MS / 1000)  # a doubled delivery would have shown up by now
        assert recorder.numbers() == [0, 1, 2, 3, 4], "each message exactly once"
    finally:
        worker.stop()


def test_redelivery_needs_no_fetch_on_the_queue(settings):
    """The round runs on its own thread: a worker whose consumers only ack, or wait on a
    wake list, still hands a dead worker's messages back (here no consumer of the queue runs
    at all in the live process; another queue's worker hosts the rounds)."""
    live = build_broker(settings)
    recorder = Recorder(live, "embed")
    for n in range(3):
        recorder.actor.send(n)
    take_and_die(settings, "embed", 3)
    worker = run_worker(live, "maintenance")  # does not consume embed
    try:
        wait_until(lambda: live.client.llen(f"{NAMESPACE}:embed") == 3, timeout=2 * BOUND_S, interval=0.05,
                   message="the dead worker's embed messages back on their queue")
    finally:
        worker.stop()


def test_a_delayed_message_on_a_write_path_queue_runs_soon_after_its_delay_at_idle(settings):
    live = build_broker(settings)
    recorder = Recorder(live, "embed")
    worker = run_worker(live, "embed")
    try:
        wait_backed_off(worker)
        sent_at = time.monotonic()
        recorder.actor.send_with_options(args=(7,), delay=500)
        wait_until(lambda: recorder.calls, timeout=2 * (0.5 + BOUND_S), interval=0.02, message="delayed message run")
        ran_after = recorder.calls[0][1] - sent_at
        assert 0.5 <= ran_after <= 0.5 + 2 * FETCH_WAIT_MS / 1000
    finally:
        worker.stop()


def test_a_failed_message_is_retried_after_its_backoff_at_idle(settings):
    live = build_broker(settings)
    recorder = Recorder(live, "persist", fail_first=2)
    worker = run_worker(live, "persist")
    try:
        wait_backed_off(worker)
        recorder.actor.send(1)
        # Two failures, each retried after at most RETRY_MAX_BACKOFF_MS, then fetched again.
        retry_bound = 2 * (settings.retry_max_backoff_ms + FETCH_WAIT_MS) / 1000
        wait_until(lambda: len(recorder.calls) == 3, timeout=2 * retry_bound, interval=0.02, message="two retries")
        assert recorder.calls[-1][1] - recorder.calls[0][1] <= retry_bound
        assert live.client.zcard(f"{NAMESPACE}:persist.XQ") == 0
    finally:
        worker.stop()


def test_an_exhausted_message_reaches_the_dead_letters_and_a_replay_runs_at_idle(settings):
    # The broker's retry policy (pipeline.retry_policy) decides, from ACTOR_MAX_RETRIES.
    live = build_broker(settings.model_copy(update={"actor_max_retries": 1}))
    recorder = Recorder(live, "vectors", fail_first=2)
    worker = run_worker(live, "vectors")
    try:
        recorder.actor.send(3)
        retry_bound = (settings.retry_max_backoff_ms + FETCH_WAIT_MS) / 1000
        wait_until(lambda: live.client.zcard(f"{NAMESPACE}:vectors.XQ") == 1, timeout=2 * retry_bound,
                   interval=0.02, message="the message dead-lettered after its one retry")
        assert len(recorder.calls) == 2
        wait_backed_off(worker)  # idle again
        assert deadletters.replay(live, ("vectors",)) == 1
        # Replayed through the broker: woken at once, fetched within QUEUE_POLL_MS even without.
        wait_until(lambda: len(recorder.calls) == 3, timeout=2 * FETCH_WAIT_MS / 1000, interval=0.02,
                   message="the replayed message run")
        assert live.client.zcard(f"{NAMESPACE}:vectors.XQ") == 0
    finally:
        worker.stop()
