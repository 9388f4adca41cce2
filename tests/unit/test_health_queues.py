"""/health's queue counts: what is waiting or in flight, what is delayed, what is dead."""

from types import SimpleNamespace

import fakeredis

from api.routes.health import queue_stats
from pipeline.stages import ALL_QUEUES


def test_a_delayed_message_counts_as_delayed_not_as_waiting():
    client = fakeredis.FakeRedis()
    client.hset("mempipe:embed.msgs", mapping={"a": "{}", "b": "{}"})  # waiting or being worked on
    client.hset("mempipe:enrich.DQ.msgs", mapping={"c": "{}"})  # a retry waiting out its backoff
    client.zadd("mempipe:persist.XQ", {"d": 1.0})  # a dead letter
    depths, delayed, dead = queue_stats(SimpleNamespace(broker_redis=client))
    assert set(depths) == set(delayed) == set(ALL_QUEUES)
    assert depths["embed"] == 2 and depths["enrich"] == 0
    assert delayed["enrich"] == 1 and delayed["embed"] == 0
    assert dead == 1
