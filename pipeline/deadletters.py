"""The dead-letter queue: what failed its last retry, kept for an operator to see and replay.

Dramatiq's Redis broker moves a message that exhausted its retries into the queue's dead
set (``mempipe:<queue>.XQ``, bodies in ``…XQ.msgs``); the broker is configured to keep them
for ``DEAD_MESSAGE_TTL_DAYS`` (ten years by default), so nothing accepted is dropped.

Listing, inspecting, replaying and purging them, for the admin routes (``/admin/deadletters``)
and the operator's command line (``python -m ops.deadletters``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dramatiq import Message
from dramatiq.brokers.redis import RedisBroker
from dramatiq.common import xq_name

from pipeline.broker import NAMESPACE
from pipeline.stages import ALL_QUEUES
from pipeline.tracking import PipelineTracker
from pipeline.write_failures import memory_ids


@dataclass(frozen=True)
class DeadMessage:
    queue: str
    redis_id: str
    message: Message

    def summary(self) -> dict[str, Any]:
        traceback = self.message.options.get("traceback") or ""
        return {
            "queue": self.queue,
            "id": self.redis_id,
            "actor": self.message.actor_name,
            "retries": self.message.options.get("retries", 0),
            "error": traceback.strip().splitlines()[-1] if traceback else None,
            "items": len(self.message.args[0]) if self.message.args and isinstance(self.message.args[0], list) else 1,
        }


def _keys(queue: str) -> tuple[str, str]:
    dead = f"{NAMESPACE}:{xq_name(queue)}"
    return dead, dead + ".msgs"


def dead_messages(broker: RedisBroker, queues: tuple[str, ...] = ALL_QUEUES) -> list[DeadMessage]:
    found = []
    for queue in queues:
        _, bodies = _keys(queue)
        for redis_id, data in broker.client.hgetall(bodies).items():
            found.append(DeadMessage(queue, redis_id.decode(), Message.decode(data)))
    return found


def inspect(broker: RedisBroker, queue: str, redis_id: str) -> dict[str, Any] | None:
    """One dead message in full: its summary, arguments, options and traceback."""
    _, bodies = _keys(queue)
    data = broker.client.hget(bodies, redis_id)
    if data is None:
        return None
    dead = DeadMessage(queue, redis_id, Message.decode(data))
    options = {k: v for k, v in dead.message.options.items() if k != "traceback"}
    return {
        **dead.summary(),
        "message_id": dead.message.message_id,
        "args": dead.message.args,
        "kwargs": dead.message.kwargs,
        "options": options,
        "traceback": dead.message.options.get("traceback"),
        "enqueued_at": dead.message.message_timestamp,
    }


def replay(broker: RedisBroker, queues: tuple[str, ...] = ALL_QUEUES, ids: set[str] | None = None) -> int:
    """Re-enqueue dead messages (all, or those with the given ids) with a fresh retry budget."""
    count = 0
    for dead in dead_messages(broker, queues):
        if ids is not None and dead.redis_id not in ids:
            continue
        options = {k: v for k, v in dead.message.options.items() if k not in ("retries", "traceback", "eta", "redis_message_id")}
        fresh = dead.message.copy(queue_name=dead.queue)
        fresh = Message(**{**fresh.asdict(), "options": options})
        broker.enqueue(fresh)
        # Only after the copy is safely enqueued: a crash in between replays twice, which the
        # idempotent actors absorb, rather than losing the message. Its memories (a failed
        # write) are in flight again only now, so none is in flight without a message.
        PipelineTracker(broker.client).mark_replayed(memory_ids(dead.message.actor_name, dead.message.args))
        zset, bodies = _keys(dead.queue)
        pipe = broker.client.pipeline()
        pipe.zrem(zset, dead.redis_id)
        pipe.hdel(bodies, dead.redis_id)
        pipe.execute()
        count += 1
    return count


def _forget_failed_writes(broker: RedisBroker, raw_messages: list[bytes]) -> None:
    """Purged write messages will never run: their memories stop being reported as failed writes."""
    ids = [m for raw in raw_messages for m in _ids_of(raw)]
    if ids:
        PipelineTracker(broker.client).discard(ids)


def _ids_of(raw: bytes) -> list[str]:
    message = Message.decode(raw)
    return memory_ids(message.actor_name, message.args)


def purge(broker: RedisBroker, queues: tuple[str, ...] = ALL_QUEUES, ids: set[str] | None = None) -> int:
    count = 0
    if ids is not None:
        for queue in queues:
            zset, bodies = _keys(queue)
            for redis_id in ids:
                raw = broker.client.hget(bodies, redis_id)
                if raw is not None and broker.client.hdel(bodies, redis_id):
                    broker.client.zrem(zset, redis_id)
                    _forget_failed_writes(broker, [raw])
                    count += 1
        return count
    for queue in queues:
        zset, bodies = _keys(queue)
        raw_messages = list(broker.client.hvals(bodies))
        count += len(raw_messages)
        broker.client.delete(zset, bodies)
        _forget_failed_writes(broker, raw_messages)
    return count
