"""Queue depth, age of the oldest waiting message, and dead letters, read from Redis at scrape.

The broker is shared by the whole fleet, so the web process's ``/metrics`` gives the
fleet-wide view of every queue however many workers there are. Keys follow Dramatiq's Redis
broker: ``<ns>:<queue>`` (list of waiting ids, oldest first), ``<ns>:<queue>.msgs`` (hash of
waiting and in-flight messages), ``<ns>:<queue>.DQ`` (delayed: retries waiting their
backoff), ``<ns>:<queue>.XQ`` (dead letters, kept for inspection and replay).
"""

from __future__ import annotations

import time
from typing import Callable, Iterable

import redis
from dramatiq import Message
from dramatiq.common import dq_name, xq_name

from pipeline.broker import NAMESPACE
from pipeline.stages import ALL_QUEUES


def _age_seconds(raw: bytes | None, now_ms: float) -> float:
    if raw is None:
        return 0.0
    try:
        return max(0.0, (now_ms - Message.decode(raw).message_timestamp) / 1000)
    except Exception:  # an undecodable message has no age worth reporting
        return 0.0


def read_queue_stats(client: redis.Redis, queues: Iterable[str] = ALL_QUEUES) -> dict[str, dict[str, float]]:
    """Per queue (and its delay queue ``<queue>.DQ``): waiting, stored, oldest age, dead."""
    names = [name for queue in queues for name in (queue, dq_name(queue))]
    pipe = client.pipeline(transaction=False)
    for name in names:
        key = f"{NAMESPACE}:{name}"
        pipe.llen(key)
        pipe.hlen(f"{key}.msgs")
        pipe.lindex(key, 0)
    for queue in queues:
        pipe.zcard(f"{NAMESPACE}:{xq_name(queue)}")
    replies = pipe.execute()
    heads = {name: replies[i * 3 + 2] for i, name in enumerate(names)}
    # The oldest waiting message's body, fetched in a second round trip.
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.hget(f"{NAMESPACE}:{name}.msgs", heads[name] or b"")  # no such field when the queue is empty
    bodies = pipe.execute()
    now_ms = time.time() * 1000
    stats: dict[str, dict[str, float]] = {}
    for i, name in enumerate(names):
        body = bodies[i] or None
        stats[name] = {"waiting": replies[i * 3], "stored": replies[i * 3 + 1], "oldest_age_seconds": _age_seconds(body, now_ms)}
    dead = replies[len(names) * 3 :]
    for queue, count in zip(queues, dead):
        stats[queue]["dead"] = count
    return stats


class QueueCollector:
    """A prometheus_client collector over ``read_queue_stats`` (one read per scrape)."""

    def __init__(self, client: Callable[[], redis.Redis], queues: Iterable[str] = ALL_QUEUES):
        self._client = client
        self._queues = tuple(queues)

    def describe(self):
        return []  # computed at scrape; nothing to check at registration

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        up = GaugeMetricFamily("mempipe_broker_up", "1 when the broker (Redis) answered this scrape.")
        waiting = GaugeMetricFamily("mempipe_queue_waiting_messages", "Messages waiting to be consumed.", labels=["queue"])
        stored = GaugeMetricFamily("mempipe_queue_messages", "Messages waiting or in flight (not yet acknowledged).", labels=["queue"])
        age = GaugeMetricFamily("mempipe_queue_oldest_message_age_seconds", "Age of the oldest waiting message (0 when none).", labels=["queue"])
        dead = GaugeMetricFamily("mempipe_dead_letter_messages", "Messages in the dead-letter queue.", labels=["queue"])
        try:
            stats = read_queue_stats(self._client(), self._queues)
        except redis.RedisError:
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        for name, values in stats.items():
            waiting.add_metric([name], values["waiting"])
            stored.add_metric([name], values["stored"])
            age.add_metric([name], values["oldest_age_seconds"])
            if "dead" in values:
                dead.add_metric([name], values["dead"])
        yield from (up, waiting, stored, age, dead)
