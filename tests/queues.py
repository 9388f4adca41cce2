"""What a stack's broker holds, read straight from its Redis database, for tests that must not
depend on what earlier tests queued on a shared stack."""

from __future__ import annotations

import redis

from pipeline.broker import held_messages_key
from pipeline.stages import HOT_QUEUES


def broker_of(stack) -> redis.Redis:
    return redis.Redis.from_url(stack.redis_url)


def held_message_ids(stack, queue: str) -> set[bytes]:
    """The ids of ``queue``'s messages waiting or in flight (a message stays held until acked)."""
    client = broker_of(stack)
    try:
        return set(client.hkeys(held_messages_key(queue)))
    finally:
        client.close()


def write_path_idle(health: dict) -> bool:
    """Nothing waiting or in flight on the write path (persist, embed, vectors), from /health."""
    return all(health["queues"][queue] == 0 for queue in HOT_QUEUES)


def consumers_waiting(stack) -> int:
    """Connections of this stack blocked in a wait for a wake-up (``BLPOP`` on a wake list).

    Only the write-path queues' consumers block in Redis (the others back off in-process), and
    ``CLIENT LIST`` names each connection's database, so other stacks on the same server do
    not count."""
    client = broker_of(stack)
    try:
        return sum(1 for c in client.client_list()
                   if int(c.get("db", -1)) == stack.redis_db and "b" in c.get("flags", "") and c.get("cmd") == "blpop")
    finally:
        client.close()
