"""Enrichment bookkeeping on the broker's Redis: what is waiting, in flight, done, failed.

Counters are Redis hashes updated with HINCRBY, so every worker process adds to the same
figures; ``GET /enrichment/status`` reads them. Keys:

- ``mempipe:enrich:pending`` / ``…:inflight`` — sets of memory ids waiting / being enriched.
- ``mempipe:enrich:stats`` — processed, failed, last_success_at, last_error, last_error_at.
- ``mempipe:enrich:classification`` — llm_attempts, llm_successes, fallbacks,
  pattern_classifications, last_error, last_error_at (the spec's classification block).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable

import redis

PENDING_KEY = "mempipe:enrich:pending"
INFLIGHT_KEY = "mempipe:enrich:inflight"
STATS_KEY = "mempipe:enrich:stats"
CLASSIFICATION_KEY = "mempipe:enrich:classification"
CLASSIFICATION_COUNTERS = ("llm_attempts", "llm_successes", "fallbacks", "pattern_classifications")
STATS_COUNTERS = ("processed", "failed")


def _decode(raw: dict[bytes, bytes], counters: Iterable[str], fields: Iterable[str]) -> dict[str, Any]:
    values = {k.decode(): v.decode() for k, v in raw.items()}
    out: dict[str, Any] = {name: int(values.get(name, 0)) for name in counters}
    out.update({name: values.get(name) for name in fields})
    return out


class EnrichmentStats:
    def __init__(self, client: redis.Redis):
        self._redis = client

    def queued(self, memory_ids: list[str]) -> None:
        if memory_ids:
            self._redis.sadd(PENDING_KEY, *memory_ids)

    def started(self, memory_ids: list[str]) -> None:
        if not memory_ids:
            return
        pipe = self._redis.pipeline(transaction=False)
        pipe.srem(PENDING_KEY, *memory_ids)
        pipe.sadd(INFLIGHT_KEY, *memory_ids)
        pipe.execute()

    def finished(self, memory_ids: list[str], classification: Counter, last_error: str | None, at: str) -> None:
        pipe = self._redis.pipeline(transaction=False)
        if memory_ids:
            pipe.srem(PENDING_KEY, *memory_ids)
            pipe.srem(INFLIGHT_KEY, *memory_ids)
            pipe.hincrby(STATS_KEY, "processed", len(memory_ids))
            pipe.hset(STATS_KEY, "last_success_at", at)
        for name, amount in classification.items():
            if amount:
                pipe.hincrby(CLASSIFICATION_KEY, name, amount)
        if last_error:
            pipe.hset(CLASSIFICATION_KEY, mapping={"last_error": last_error, "last_error_at": at})
        pipe.execute()

    def failed(self, memory_ids: list[str], error: str, at: str, final: bool) -> None:
        """An attempt failed; ``final`` when the message exhausted its retries (dead-lettered)."""
        pipe = self._redis.pipeline(transaction=False)
        if final:
            if memory_ids:
                pipe.srem(PENDING_KEY, *memory_ids)
                pipe.srem(INFLIGHT_KEY, *memory_ids)
            pipe.hincrby(STATS_KEY, "failed", len(memory_ids))
        pipe.hset(STATS_KEY, mapping={"last_error": error[:300], "last_error_at": at})
        pipe.execute()

    def snapshot(self) -> dict[str, Any]:
        pipe = self._redis.pipeline(transaction=False)
        pipe.scard(PENDING_KEY)
        pipe.scard(INFLIGHT_KEY)
        pipe.hgetall(STATS_KEY)
        pipe.hgetall(CLASSIFICATION_KEY)
        pending, inflight, stats, classification = pipe.execute()
        return {
            "pending": int(pending),
            "inflight": int(inflight),
            "stats": _decode(stats, STATS_COUNTERS, ("last_success_at", "last_error", "last_error_at")),
            "classification": _decode(classification, CLASSIFICATION_COUNTERS, ("last_error", "last_error_at")),
        }
