"""The sync guard: when deleting orphan vectors would destroy data rather than tidy up.

Sync treats the graph as the record, so a point without a node looks like debris. But a graph
that comes back empty or short (a lost volume, a wrong FALKORDB_GRAPH, a restore gone wrong)
makes every surviving point look like debris, and those points hold the only remaining copy
of the content. So a real sync deletes no orphan when the graph is empty, or when the orphans
exceed either bound (SYNC_ORPHAN_MAX_COUNT, or SYNC_ORPHAN_MAX_SHARE of the vectors checked).
It then settles as ``refused`` and the guard stays tripped (in /health and /metrics) until a
later sync finds the orphans within bounds or the ``recover`` cycle rebuilds the graph.

The guard's state is one hash on the broker's Redis, ``mempipe:sync:guard``.
"""

from __future__ import annotations

import time
from typing import Any

import redis

GUARD_KEY = "mempipe:sync:guard"

# Below this many orphans the share bound does not apply: in a small store one stray point is
# already a large share, and what sync deletes is quarantined (recoverable) anyway.
SHARE_APPLIES_ABOVE = 10


def verdict(orphans: int, vectors_checked: int, graph_memories: int, max_share: float, max_count: int) -> str | None:
    """Why deleting ``orphans`` points is refused, or None when it may go ahead."""
    if orphans <= 0:
        return None
    if graph_memories == 0:
        return f"the graph holds no memories while {orphans} vectors have no node (an empty or wrong graph?)"
    if orphans > max_count:
        return f"{orphans} orphan vectors exceed SYNC_ORPHAN_MAX_COUNT={max_count} (a graph that came back short?)"
    share = orphans / max(vectors_checked, 1)
    if orphans > SHARE_APPLIES_ABOVE and share > max_share:
        return (f"{orphans} orphan vectors are {share:.1%} of the {vectors_checked} checked, above "
                f"SYNC_ORPHAN_MAX_SHARE={max_share:.1%} (a graph that came back short?)")
    return None


class GuardState:
    def __init__(self, client: redis.Redis):
        self._redis = client

    def trip(self, run_id: str, reason: str, orphans: int, vectors_checked: int) -> None:
        self._redis.hset(GUARD_KEY, mapping={
            "status": "tripped", "reason": reason, "orphans": orphans, "vectors_checked": vectors_checked,
            "run_id": run_id, "at": time.time(),
        })

    def clear(self) -> None:
        self._redis.delete(GUARD_KEY)

    def read(self) -> dict[str, Any] | None:
        """The tripped guard as /health shows it, or None when sync is free to delete."""
        data = {k.decode(): v.decode() for k, v in self._redis.hgetall(GUARD_KEY).items()}
        if data.get("status") != "tripped":
            return None
        return {
            "status": "tripped",
            "reason": data.get("reason"),
            "orphans": int(data.get("orphans") or 0),
            "vectors_checked": int(data.get("vectors_checked") or 0),
            "run_id": data.get("run_id"),
            "at": float(data.get("at") or 0),
        }
