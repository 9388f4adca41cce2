"""Keep the stores' AOF compact, so that a restart loads a snapshot instead of a history.

Redis 7+ keeps the AOF as parts under ``appendonlydir/``: a base (with ``aof-use-rdb-preamble``
an RDB snapshot, fast to load) and incremental logs of every write since (replayed command by
command at start-up). ``BGREWRITEAOF`` folds the logs into a new base. Redis' own trigger
compares the log with the base (by default: rewrite once the AOF doubled and passed 64 MB),
which lets the log of a big store grow as big as the store; for the graph that is fatal to a
restart, since every logged write is a Cypher query run again on replay, far slower than
loading the same data from a snapshot.

So the launcher rewrites by the size of the log alone: when a store's incremental log passes
``EMBEDDED_AOF_REWRITE_INCR_MB`` (checked every few seconds while it runs), right after
start-up if the last run left a long log (a ``kill -9``), and on a clean stop, when nothing
writes any more. While the log keeps growing (an import) two rewrites of one store are at
least ``EMBEDDED_AOF_REWRITE_MIN_INTERVAL_S`` apart, so that a long import does not rewrite
back to back, unless the log has grown to ``EMBEDDED_AOF_REWRITE_LOG_RATIO`` of the snapshot:
a fast import wrote a whole 100k graph's log (48 MB, 7.5 s to replay) within one interval,
while the snapshot it would have been folded into loads in under 2 s. Once the log has stopped
growing between two checks (the import is over) the rewrite runs at once, so the end of bulk
work is never left in the log.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

import redis

CHECK_EVERY_S = 5.0
STOP_MIN_INCR_BYTES = 64 * 1024  # below this a clean stop leaves the log as it is: replaying it is instant


class Store(Protocol):
    name: str
    data_dir: Path

    def client(self, timeout: float = 1.0) -> redis.Redis: ...


def incremental_bytes(data_dir: Path) -> int:
    """Bytes of the incremental AOF logs in a store's data dir (what a restart must replay)."""
    return sum(path.stat().st_size for path in data_dir.glob("appendonlydir/*.incr.aof") if path.is_file())


def base_bytes(data_dir: Path) -> int:
    """Bytes of a store's AOF base (the snapshot a restart loads before replaying the log)."""
    return sum(path.stat().st_size for path in data_dir.glob("appendonlydir/*.base.*") if path.is_file())


def start_rewrite(store: Store) -> bool:
    """Ask for a rewrite; False when the server refused (one already running counts as True)."""
    try:
        with store.client(timeout=5.0) as client:
            client.bgrewriteaof()
        return True
    except redis.ResponseError as exc:
        return "in progress" in str(exc)
    except (redis.ConnectionError, redis.TimeoutError):
        return False


def rewriting(store: Store) -> bool:
    """Is a rewrite running or scheduled? False as well when the server does not answer."""
    try:
        with store.client(timeout=2.0) as client:
            info = client.info("persistence")
    except (redis.ConnectionError, redis.TimeoutError):
        return False
    return bool(info.get("aof_rewrite_in_progress") or info.get("aof_rewrite_scheduled"))


def compact_now(stores: list[Store], timeout: float, min_bytes: int = STOP_MIN_INCR_BYTES) -> list[str]:
    """Rewrite every store whose log holds at least ``min_bytes``, together; wait up to ``timeout``.

    Returns the names of the stores whose rewrite had not finished by then (their old AOF
    stays valid: a stop that interrupts a rewrite only costs the next start a longer replay).
    """
    started = [store for store in stores if incremental_bytes(store.data_dir) >= min_bytes and start_rewrite(store)]
    deadline = time.monotonic() + timeout
    pending = list(started)
    while pending and time.monotonic() < deadline:
        time.sleep(0.1)
        pending = [store for store in pending if rewriting(store)]
    return [store.name for store in pending]


@dataclass
class Compactor:
    """Rewrites a store's AOF once its incremental log passes ``max_incr_bytes``; call ``tick`` often."""

    stores: list[Store]
    max_incr_bytes: int
    min_interval_s: float
    max_log_to_base: float = 0.5
    clock: Callable[[], float] = time.monotonic
    check_every_s: float = CHECK_EVERY_S
    log: Callable[[str], None] = print
    _last_rewrite: dict[str, float] = field(default_factory=dict)
    _last_size: dict[str, int] = field(default_factory=dict)
    _last_check: float | None = None

    def tick(self) -> list[str]:
        """Start the rewrites that are due; returns the names of the stores asked to rewrite."""
        now = self.clock()
        if self._last_check is not None and now - self._last_check < self.check_every_s:
            return []
        self._last_check = now
        asked = []
        for store in self.stores:
            size = incremental_bytes(store.data_dir)
            quiet = size == self._last_size.get(store.name)
            self._last_size[store.name] = size
            last = self._last_rewrite.get(store.name)
            outgrown = size >= self.max_log_to_base * base_bytes(store.data_dir)
            if last is not None and now - last < self.min_interval_s and not quiet and not outgrown:
                continue
            if size >= self.max_incr_bytes and start_rewrite(store):
                self._last_rewrite[store.name] = now
                self.log(f"mempipe: {store.name}: compacting its AOF ({size / 1e6:.1f} MB logged since the last snapshot)")
                asked.append(store.name)
        return asked
