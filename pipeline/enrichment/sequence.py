"""PRECEDED_BY chains: each memory points at the previous memory of each of its scopes.

Finding "the memory just before this one in scope S" in the graph costs a scan of S (FalkorDB
picks one index per pattern, and a long Slack channel has 100k members). So each scope keeps
an ordered index beside the graph: a Redis sorted set on the broker, score = timestamp,
member = the memory's arrival (its order of acceptance, zero-padded) then its id. Redis orders
equal scores by member, so memories sharing a timestamp — a batch of chat turns imported with
their session's time — chain in the order they were sent. It is derived data: a scope whose set
is missing is rebuilt from the graph before it is used.

Memories may arrive out of order (imports, retries), so inserting M between P and N links
M→P and N→M and drops N's old edge to P. Work on one scope is serialised by a short Redis
lock, so two workers inserting neighbours cannot leave a stale edge behind.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import redis

from pipeline.graph import GraphStore

_KEY_PREFIX = "mempipe:scope2:"  # 2: members carry the arrival (sets of bare ids are rebuilt)
_LOCK_PREFIX = "mempipe:lock:scope:"
_CANDIDATES = 5  # neighbours fetched per side, in case some were deleted since

# Neighbours of ARGV[1] in KEYS[1]: up to ARGV[2] before (nearest last) and after (nearest first).
_NEIGHBOURS = """
local rank = redis.call('zrank', KEYS[1], ARGV[1])
if not rank then return {{}, {}} end
local n = tonumber(ARGV[2])
local before = {}
if rank > 0 then before = redis.call('zrange', KEYS[1], math.max(0, rank - n), rank - 1) end
local after = redis.call('zrange', KEYS[1], rank + 1, rank + n)
return {before, after}
"""

# One row per memory whose predecessor in the scope is decided (``dst``; null = none): its
# other PRECEDED_BY edges in the scope go, the one to ``dst`` is merged. Each ``src`` comes
# once and there is a single MERGE clause: FalkorDB does not see edges that another MERGE
# clause of the same query is about to create, so merging the pair from both ends (as M's
# predecessor and as N's successor) wrote it twice.
_LINK = (
    "UNWIND $rows AS row "
    "MATCH (a:Memory {id: row.src}) "
    "OPTIONAL MATCH (a)-[stale:PRECEDED_BY {scope: $scope}]->(o:Memory) WHERE row.dst IS NULL OR o.id <> row.dst "
    "DELETE stale "
    "WITH DISTINCT a, row "
    "MATCH (b:Memory {id: row.dst}) "
    "MERGE (a)-[r:PRECEDED_BY {scope: $scope}]->(b) "
    "ON CREATE SET r.created_at = $at, r.strength = 1.0 "
    "SET r.updated_at = $at, r.updated_epoch = $epoch "
    "RETURN count(r)"
)


@dataclass(frozen=True)
class Placed:
    memory_id: str
    scope: str
    timestamp_epoch: float


def _member(memory_id: str, arrival: int | None) -> str:
    return f"{arrival or 0:020d}|{memory_id}"


def _memory_id(member: bytes) -> str:
    return member.decode()[21:]


def _key(scope: str) -> str:
    # Tags are free text: hash them into a bounded, safe key.
    return _KEY_PREFIX + hashlib.blake2b(scope.encode(), digest_size=16).hexdigest()


class SequenceLinker:
    def __init__(self, redis_client: redis.Redis, graph: GraphStore, lock_timeout_s: float = 30.0):
        self._redis = redis_client
        self._graph = graph
        self._neighbours = redis_client.register_script(_NEIGHBOURS)
        self._lock_timeout_s = lock_timeout_s

    def _ensure_index(self, scope: str, key: str) -> None:
        if self._redis.exists(key):
            return
        rows = self._graph.run_read(
            "MATCH (m:Memory) WHERE $scope IN m.tags RETURN m.id, m.timestamp_epoch, m.arrival", {"scope": scope}
        )
        members = {_member(row[0], row[2]): float(row[1] or 0.0) for row in rows}
        if members:
            self._redis.zadd(key, members)

    def link(self, placed: list[Placed], at: str, epoch: float) -> int:
        """Insert memories into their scopes' chains; returns the edges' rows written."""
        by_scope: dict[str, list[Placed]] = {}
        for item in placed:
            by_scope.setdefault(item.scope, []).append(item)
        members = _current_members(self._graph, sorted({i.memory_id for i in placed}))
        written = 0
        for scope, items in sorted(by_scope.items()):
            key = _key(scope)
            with self._redis.lock(_LOCK_PREFIX + key[len(_KEY_PREFIX):], timeout=self._lock_timeout_s,
                                  blocking_timeout=self._lock_timeout_s):
                self._ensure_index(scope, key)
                items = [i for i in items if i.memory_id in members]  # deleted since
                self._redis.zadd(key, {members[i.memory_id]: i.timestamp_epoch for i in items})
                written += self._link_scope(scope, key, items, members, at, epoch)
        return written

    def _link_scope(self, scope: str, key: str, items: list[Placed], members: dict[str, str], at: str,
                    epoch: float) -> int:
        if not items:
            return 0
        pipe = self._redis.pipeline(transaction=False)
        for item in items:
            self._neighbours(keys=[key], args=[members[item.memory_id], _CANDIDATES], client=pipe)
        neighbours = pipe.execute()
        candidates = {m.decode() for before, after in neighbours for m in before + after}
        current = _current_members(self._graph, sorted({m[21:] for m in candidates}))
        # deleted since they were indexed, or deleted and written again (a new arrival)
        gone = {m for m in candidates if current.get(m[21:]) != m}
        if gone:
            self._redis.zrem(key, *gone)
        # Each placed memory decides its own predecessor and its successor's; one snapshot of
        # the index answers both, so two rows never disagree about a memory.
        predecessor: dict[str, str | None] = {}
        for item, (before, after) in zip(items, neighbours):
            prev = next((_memory_id(m) for m in reversed(before) if m.decode() not in gone), None)
            nxt = next((_memory_id(m) for m in after if m.decode() not in gone), None)
            predecessor[item.memory_id] = prev
            if nxt is not None:
                predecessor[nxt] = item.memory_id
        rows = [{"src": src, "dst": dst} for src, dst in sorted(predecessor.items())]
        self._graph.run_write(_LINK, {"rows": rows, "scope": scope, "at": at, "epoch": epoch})
        return len(rows)


def _current_members(graph: GraphStore, memory_ids: list[str]) -> dict[str, str]:
    """The sorted-set member each existing memory should have now."""
    if not memory_ids:
        return {}
    rows = graph.run_read("UNWIND $ids AS id MATCH (m:Memory {id: id}) RETURN m.id, m.arrival", {"ids": memory_ids})
    return {row[0]: _member(row[0], row[1]) for row in rows}
