"""Recall's one write, batched off the request path: ``last_accessed`` of the returned seeds.

A recall only adds ids to an in-memory set; a background thread sends one maintenance
message per ``interval_s`` with every id gathered since the last send, stamped with the time
of the latest recall among them (accurate to the interval). A failed send keeps the ids for
the next round (bounded by ``max_pending``: the oldest are dropped first, access tracking
never grows without bound). ``stop()`` sends what is left.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

log = logging.getLogger(__name__)


class AccessBatcher:
    def __init__(self, send: Callable[[list[str], str], object], interval_s: float, max_pending: int = 10_000):
        self._send = send
        self._interval = interval_s
        self._max_pending = max_pending
        self._ids: dict[str, None] = {}  # insertion-ordered set
        self._at: str | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def record(self, memory_ids: list[str], at: str) -> None:
        if self._interval <= 0:  # batching off: send on the caller's thread
            self._send(list(dict.fromkeys(memory_ids)), at)
            return
        with self._lock:
            for memory_id in memory_ids:
                self._ids[memory_id] = None
            if self._at is None or at > self._at:
                self._at = at
            while len(self._ids) > self._max_pending:
                del self._ids[next(iter(self._ids))]

    def flush(self) -> int:
        """Send what was gathered; returns how many ids went out (0 on failure: kept for later)."""
        with self._lock:
            ids, at = list(self._ids), self._at
            self._ids, self._at = {}, None
        if not ids:
            return 0
        try:
            self._send(ids, at)
            return len(ids)
        except Exception as exc:
            log.warning("last_accessed update for %d memories not queued, retrying: %s", len(ids), exc)
            with self._lock:
                self._ids = {**dict.fromkeys(ids), **self._ids}
                self._at = max(filter(None, (self._at, at)))
            return 0

    def start(self) -> None:
        if self._interval > 0 and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="access-batcher", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stopping.wait(self._interval):
            self.flush()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self.flush()
