"""Vector points sync took out of the index, kept so that nothing it removed is gone for good.

A point whose memory is missing from the graph ("orphan") may be the only copy of that
memory left: its payload holds the content, tags, metadata and times. Before sync deletes
one, the point (payload and vector) is copied here, on the broker's Redis, where the
``recover`` cycle can put it back (node and point). Entries stay until they are recovered;
nothing expires them. Keys:

- ``mempipe:quarantine:points`` — hash: memory id → JSON ``{payload, vector, reason, run_id, at}``
- ``mempipe:quarantine:index`` — sorted set of the same ids, all scored 0, so they page in id order
"""

from __future__ import annotations

import time
from typing import Any

import orjson
import redis

POINTS_KEY = "mempipe:quarantine:points"
INDEX_KEY = "mempipe:quarantine:index"


class Quarantine:
    def __init__(self, client: redis.Redis):
        self._redis = client

    def put(self, entries: dict[str, dict[str, Any]], reason: str, run_id: str) -> None:
        """Keep each memory's point (``{"payload", "vector"}``); a second put of an id replaces the first."""
        if not entries:
            return
        at = time.time()
        pipe = self._redis.pipeline(transaction=True)  # both keys or neither
        pipe.hset(POINTS_KEY, mapping={
            memory_id: orjson.dumps({**entry, "reason": reason, "run_id": run_id, "at": at})
            for memory_id, entry in entries.items()
        })
        pipe.zadd(INDEX_KEY, dict.fromkeys(entries, 0))
        pipe.execute()

    def page(self, after: str | None, limit: int) -> list[tuple[str, dict[str, Any]]]:
        """Up to ``limit`` entries with ids after ``after``, in id order (a stable keyset page)."""
        low = f"({after}" if after else "-"
        ids = [i.decode() for i in self._redis.zrangebylex(INDEX_KEY, low, "+", start=0, num=limit)]
        if not ids:
            return []
        raw = self._redis.hmget(POINTS_KEY, ids)
        return [(i, orjson.loads(r)) for i, r in zip(ids, raw) if r is not None]

    def remove(self, memory_ids: list[str]) -> None:
        if memory_ids:
            pipe = self._redis.pipeline(transaction=True)
            pipe.hdel(POINTS_KEY, *memory_ids)
            pipe.zrem(INDEX_KEY, *memory_ids)
            pipe.execute()

    def count(self) -> int:
        return int(self._redis.hlen(POINTS_KEY))
