"""Where an accepted write is in the pipeline, and the signal that it is done.

Kept on the broker's Redis (never on the stores), so the API can answer "pending" for a
memory that is queued but not yet in the graph, and a waiting write can be woken the moment
the last stage finishes. Keys:

- ``mempipe:pending:<id>`` — hash ``state`` (queued, persisted, embedded) and ``record``
  (the queued memory as JSON); removed when the memory is recallable.
- ``mempipe:tombstone:<id>`` — set by a delete so a persist still in flight is skipped.
- ``mempipe:inflight`` — set of the ids with a pending hash, so backpressure can read the
  backlog in O(1) (kept in step with the hashes, in the same pipelines). A write that failed
  for good leaves it: it no longer holds a place in the backlog.
- ``mempipe:failed`` — set of the ids whose write exhausted its retries (pending hash kept,
  state ``failed`` with ``reason``); their message waits in the dead-letter queue for a replay.
- ``mempipe:arriving`` — set with a short expiry each time writes are queued: while it
  exists, writes are streaming in (background work such as SIMILAR_TO yields to them). The
  expiry runs on the broker's clock, so processes on different machines agree on it.
- channel ``mempipe:done`` — one JSON message per finished batch: ``{"ids", "op", "state"}``
  (one message for a whole batch: each message costs every subscribed web process a parse).
"""

from __future__ import annotations

import time
from typing import Any, Iterable

import orjson
import redis

PENDING_PREFIX = "mempipe:pending:"
TOMBSTONE_PREFIX = "mempipe:tombstone:"
DONE_CHANNEL = "mempipe:done"
INFLIGHT_KEY = "mempipe:inflight"
FAILED_KEY = "mempipe:failed"
ARRIVING_KEY = "mempipe:arriving"
TOMBSTONE_TTL_SECONDS = 7 * 24 * 3600

QUEUED, PERSISTED, EMBEDDED, RECALLABLE, DELETED, UPDATED, FAILED = (
    "queued", "persisted", "embedded", "recallable", "deleted", "updated", "failed",
)


# Only touch a hash that exists, so a late or duplicate stage cannot resurrect a finished one.
# One call for a whole batch rather than one EVALSHA per memory.
_ADVANCE_IF_PENDING = """
for _, key in ipairs(KEYS) do
  if redis.call('exists', key) == 1 then redis.call('hset', key, 'state', ARGV[1]) end
end
"""


# Which of KEYS exist, in one command: as a pipeline of an EXISTS per memory, redis-py's
# packing and reply parsing were a large share of a drift-repair page's CPU in the web.
_EXISTING = """
local found = {}
for i, key in ipairs(KEYS) do found[i] = redis.call('exists', key) end
return found
"""


# Queueing a batch: every record's pending hash, the in-flight set, old tombstones cleared
# (ARGV[2] = 1) and the arrival key (ARGV[1] ms; 0 = none), in one command. As a pipeline of
# two commands per record, redis-py's packing is a cost per memory in the web; one script call
# costs a fraction of it, and the broker parses one command instead of a thousand. KEYS are the pending hashes; ARGV[3..] the records' JSON.
_MARK_QUEUED = """
local pending_prefix, tombstone_prefix = '""" + PENDING_PREFIX + """', '""" + TOMBSTONE_PREFIX + """'
local ids = {}
for i, key in ipairs(KEYS) do
  redis.call('hset', key, 'state', 'queued', 'record', ARGV[i + 2])
  ids[#ids + 1] = string.sub(key, #pending_prefix + 1)
end
for start = 1, #ids, 1000 do
  local chunk, tombstones = {}, {}
  for i = start, math.min(start + 999, #ids) do
    chunk[#chunk + 1] = ids[i]
    tombstones[#tombstones + 1] = tombstone_prefix .. ids[i]
  end
  redis.call('sadd', '""" + INFLIGHT_KEY + """', unpack(chunk))
  if ARGV[2] == '1' then redis.call('del', unpack(tombstones)) end
end
local window = tonumber(ARGV[1])
if #KEYS > 0 and window > 0 then redis.call('set', '""" + ARRIVING_KEY + """', 1, 'px', window) end
"""


# A write whose message exhausted its retries: state failed with the reason, out of the
# in-flight set (so backpressure stops counting it), into the failed set. Only for a pending
# hash that exists: a write that finished meanwhile stays finished. ARGV: reason, time.
_MARK_FAILED = """
local prefix, marked = '""" + PENDING_PREFIX + """', 0
for _, key in ipairs(KEYS) do
  if redis.call('exists', key) == 1 then
    local id = string.sub(key, #prefix + 1)
    redis.call('hset', key, 'state', 'failed', 'reason', ARGV[1], 'failed_at', ARGV[2])
    redis.call('srem', '""" + INFLIGHT_KEY + """', id)
    redis.call('sadd', '""" + FAILED_KEY + """', id)
    marked = marked + 1
  end
end
return marked
"""

# A failed write's message replayed: back in flight, state queued again (unless a stage has
# moved it on already). Only for a pending hash that exists.
_MARK_REPLAYED = """
local prefix = '""" + PENDING_PREFIX + """'
for _, key in ipairs(KEYS) do
  if redis.call('exists', key) == 1 then
    local id = string.sub(key, #prefix + 1)
    if redis.call('hget', key, 'state') == 'failed' then
      redis.call('hset', key, 'state', 'queued')
      redis.call('hdel', key, 'reason', 'failed_at')
    end
    redis.call('sadd', '""" + INFLIGHT_KEY + """', id)
    redis.call('srem', '""" + FAILED_KEY + """', id)
  end
end
"""


def pending_key(memory_id: str) -> str:
    return PENDING_PREFIX + memory_id


def tombstone_key(memory_id: str) -> str:
    return TOMBSTONE_PREFIX + memory_id


class PipelineTracker:
    """Synchronous view used by actors (and the API's read side)."""

    def __init__(self, client: redis.Redis, arrival_window_ms: int = 0):
        # The write path's tracker (Services.tracker) marks arrivals for SIMILAR_TO_DEFER_QUIET_MS;
        # 0, for the trackers that only read or settle states, records none.
        self._redis = client
        self._advance_script = client.register_script(_ADVANCE_IF_PENDING)
        self._mark_queued_script = client.register_script(_MARK_QUEUED)
        self._mark_failed_script = client.register_script(_MARK_FAILED)
        self._mark_replayed_script = client.register_script(_MARK_REPLAYED)
        self._existing_script = client.register_script(_EXISTING)
        self._arrival_window_ms = arrival_window_ms

    def mark_queued(self, records: Iterable[dict[str, Any]], *, clear_tombstones: bool = False) -> None:
        """Pending state for each record (and, for a new write, any old delete's tombstone cleared)."""
        records = list(records)
        if not records:
            return
        self._mark_queued_script(
            keys=[pending_key(r["id"]) for r in records],
            args=[self._arrival_window_ms, 1 if clear_tombstones else 0, *(orjson.dumps(r) for r in records)],
        )

    def writes_arriving(self) -> bool:
        """Were writes queued within the last ``arrival_window_ms``?"""
        return bool(self._redis.exists(ARRIVING_KEY))

    def advance(self, memory_ids: Iterable[str], state: str) -> None:
        """Record a stage reached, for memories still pending (a finished one stays finished)."""
        keys = [pending_key(m) for m in memory_ids]
        if keys:
            self._advance_script(keys=keys, args=[state])

    def finish(self, memory_ids: list[str], op: str, state: str) -> None:
        if not memory_ids:
            return
        pipe = self._redis.pipeline(transaction=False)
        pipe.delete(*[pending_key(m) for m in memory_ids])
        pipe.srem(INFLIGHT_KEY, *memory_ids)
        pipe.srem(FAILED_KEY, *memory_ids)
        pipe.publish(DONE_CHANNEL, orjson.dumps({"ids": list(memory_ids), "op": op, "state": state}))
        pipe.execute()

    def discard(self, memory_ids: list[str]) -> None:
        try:
            pipe = self._redis.pipeline(transaction=False)
            pipe.delete(*[pending_key(m) for m in memory_ids])
            pipe.srem(INFLIGHT_KEY, *memory_ids)
            pipe.srem(FAILED_KEY, *memory_ids)
            pipe.execute()
        except redis.RedisError:
            pass

    def mark_failed(self, memory_ids: list[str], reason: str) -> int:
        """Writes that exhausted their retries: failed with ``reason``, out of the backlog; how many."""
        if not memory_ids:
            return 0
        return int(self._mark_failed_script(keys=[pending_key(m) for m in memory_ids], args=[reason[:500], time.time()]))

    def mark_replayed(self, memory_ids: list[str]) -> None:
        """Failed writes whose message was put back on its queue: in flight again."""
        if memory_ids:
            self._mark_replayed_script(keys=[pending_key(m) for m in memory_ids])

    def failed_count(self) -> int:
        return int(self._redis.scard(FAILED_KEY))

    def pending(self, memory_id: str) -> dict[str, Any] | None:
        data = self._redis.hgetall(pending_key(memory_id))
        if not data or b"record" not in data:
            return None
        found = {"state": data[b"state"].decode(), "record": orjson.loads(data[b"record"])}
        if b"reason" in data:
            found["reason"] = data[b"reason"].decode()
        return found

    def inflight_count(self) -> int:
        """Memories accepted but not yet recallable (what backpressure bounds)."""
        return int(self._redis.scard(INFLIGHT_KEY))

    def pending_count(self) -> int:
        return sum(1 for _ in self._redis.scan_iter(match=PENDING_PREFIX + "*", count=1000))

    def tombstone(self, memory_ids: list[str]) -> None:
        pipe = self._redis.pipeline(transaction=False)
        for memory_id in memory_ids:
            pipe.set(tombstone_key(memory_id), 1, ex=TOMBSTONE_TTL_SECONDS)
            pipe.delete(pending_key(memory_id))
            pipe.srem(INFLIGHT_KEY, memory_id)
            pipe.srem(FAILED_KEY, memory_id)
        pipe.execute()

    def clear_tombstones(self, memory_ids: list[str]) -> None:
        if memory_ids:
            self._redis.delete(*[tombstone_key(m) for m in memory_ids])

    def clear_tombstone(self, memory_id: str) -> None:
        self._redis.delete(tombstone_key(memory_id))

    def in_pipeline(self, memory_ids: list[str]) -> set[str]:
        """Those of ``memory_ids`` still in the write pipeline (a pending record)."""
        if not memory_ids:
            return set()
        flags = self._existing_script(keys=[pending_key(m) for m in memory_ids])
        return {m for m, flag in zip(memory_ids, flags) if flag}

    def tombstoned(self, memory_ids: list[str]) -> set[str]:
        if not memory_ids:
            return set()
        flags = self._redis.mget([tombstone_key(m) for m in memory_ids])
        return {m for m, flag in zip(memory_ids, flags) if flag is not None}
