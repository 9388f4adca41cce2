"""The web process's index maintainer: Edge ``optimize()``, the index build, off the request path.

With Qdrant Edge the web process owns the shard. A build (the HNSW graph, or the int8 codes
alone under ``EDGE_PLAIN_MAX_POINTS``) in this process holds Python's GIL for its whole run
(seconds to minutes, growing with the shard): the process answers nothing meanwhile; with
``EDGE_BUILD_IN_CHILD`` (the default) a child process builds a copy and this thread swaps it in
at its first tick after the child ends (pipeline.vectors.edge_swap). The shard says when a
build is due (enough changes, vector writes quiet for ``EDGE_OPTIMIZE_QUIET_S``); this thread
decides whether a due build should wait a little longer:

- **while an import is on its way** (a write-path queue holds messages), unless more than
  ``import_max_changes`` points are unindexed and the build gives the shard its graph. A slow
  import (the local model) leaves vector writes quiet between batches, and every build let
  through then is superseded by the next one while taking a core from the import. Unindexed
  points cost recall a scan, hence the bound. A codes-only build (under
  ``EDGE_PLAIN_MAX_POINTS``) waits for the whole import: until it a search scans at most the
  plain size, and its swap would stop every search for about a second mid-import.
- **while the SIMILAR_TO catch-up runs after a small import** (the ``similarity`` queue holds
  messages), at most ``similarity_wait_s``: overlapped with a build, the catch-up costs the
  web several times the CPU per memory (docs/benchmarks-log.md, issue 6). Past
  ``similarity_wait_max_changes`` unindexed points the build goes first: before it every search
  scans every unindexed point, a cost that grows with the square of the import.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from pipeline.broker import held_messages_key, write_path_busy
from pipeline.stages import SIMILARITY_QUEUE
from pipeline.config import Settings
from pipeline.services import Services

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BuildHolds:
    """When a due build waits (0 turns a hold off); the EDGE_OPTIMIZE_* settings hold the defaults."""

    import_max_changes: int
    similarity_wait_s: float
    similarity_wait_max_changes: int

    @classmethod
    def from_settings(cls, settings: Settings) -> BuildHolds:
        return cls(settings.edge_optimize_import_max_changes, settings.edge_optimize_similarity_wait_s,
                   settings.edge_optimize_similarity_wait_max_changes)

    @classmethod
    def off(cls) -> BuildHolds:
        """A due build never waits (a maintainer with nothing else to consult)."""
        return cls(0, 0.0, 0)


class IndexMaintainer(threading.Thread):
    """Every ``interval`` s considers a build; every ``flush_interval`` s flushes what was written;
    every ``page_cache_refresh_s`` s (0: never) reads the shard through the page cache again."""

    def __init__(self, services: Services, interval: float, holds: BuildHolds | None = None,
                 clock=time.monotonic, flush_interval: float | None = None, page_cache_refresh_s: float = 0.0):
        super().__init__(name="vector-maintenance", daemon=True)
        self._services = services
        self._interval = interval
        self._flush_interval = flush_interval or interval
        self._page_cache_refresh_s = page_cache_refresh_s
        self._holds = holds or BuildHolds.off()
        self._clock = clock
        self._import_held = False
        self._similarity_held_since: float | None = None
        self._halt = threading.Event()

    def _hold(self) -> bool:
        """Should a build wait now? (False also when none is due.)"""
        vectors = self._services.vectors
        if not getattr(vectors, "build_due", lambda: False)():
            self._similarity_held_since = None
            return False
        unindexed = getattr(vectors, "pending_changes", lambda: 0)()
        if (0 < unindexed and (unindexed <= self._holds.import_max_changes or self._codes_only_due())
                and write_path_busy(self._services.broker_redis)):
            if not self._import_held:
                log.info("edge index build waits for the write path",
                         extra={"changes": unindexed, "max_changes": self._holds.import_max_changes})
            self._import_held = True
            return True
        self._import_held = False
        if (self._holds.similarity_wait_s <= 0 or unindexed > self._holds.similarity_wait_max_changes
                or not self._services.broker_redis.hlen(held_messages_key(SIMILARITY_QUEUE))):
            self._similarity_held_since = None
            return False
        now = self._clock()
        if self._similarity_held_since is None:
            self._similarity_held_since = now
            log.info("edge index build waits for the similarity queue", extra={"max_s": self._holds.similarity_wait_s})
        return now - self._similarity_held_since < self._holds.similarity_wait_s

    def _codes_only_due(self) -> bool:
        """Is the due build codes only (bounded scans until it), when the import hold has a bound?"""
        return self._holds.import_max_changes > 0 and bool(
            getattr(self._services.vectors, "due_build_is_codes_only", lambda: False)())

    def run(self) -> None:
        self.warm_page_cache()
        tick = min(self._interval, self._flush_interval, self._page_cache_refresh_s or self._interval)
        last_build = last_flush = last_refresh = self._clock()
        while not self._halt.wait(tick):
            now = self._clock()
            if now - last_flush >= self._flush_interval:
                last_flush = now
                self.persist()
            if self._page_cache_refresh_s and now - last_refresh >= self._page_cache_refresh_s:
                last_refresh = now
                self.refresh_page_cache()
            # A build in a child process is swapped in at the first tick after it ends.
            if now - last_build >= self._interval or self._build_in_flight():
                last_build = now
                self.maintain_once()

    def warm_page_cache(self) -> None:
        """Read the shard into the page cache once, first thing: the web already answers, and
        until this is done its first searches read from disk (pipeline.vectors.edge)."""
        started = time.monotonic()
        read = self._read_shard("reading the vector shard into the page cache failed; searches read it as they go")
        if read:
            log.info("vector shard read into the page cache",
                     extra={"bytes": read, "seconds": round(time.monotonic() - started, 2)})

    def refresh_page_cache(self) -> None:
        """Read the shard through the page cache again, so that the kernel sees its pages used.

        A machine that reclaims file pages nobody touched for a while (DAMON's ``pageout``, a
        memory-ballooned VM, a cgroup's proactive reclaim) drops the parts of the shard that
        searches did not walk lately, and an import leaves most of an indexed shard untouched:
        the first searches after it then fault their pages back from disk, a page at a time,
        while the caller holds the GIL. Reading files that are cached costs only a copy of
        them, with the GIL free during each read."""
        self._read_shard("reading the vector shard through the page cache failed; will retry")

    def _read_shard(self, failure: str) -> int:
        """The vector store's files read through the page cache (bytes; 0 for a store with none,
        or after a failure, which is logged with ``failure``); a stop ends the read early."""
        try:
            return getattr(self._services.vectors, "warm_page_cache", lambda stop: 0)(self._halt.is_set)
        except Exception:
            log.exception(failure)
            return 0

    def persist(self) -> None:
        """Flush the shard if it was written: a restart then loads segments instead of replaying."""
        try:
            self._services.vectors.persist()
        except Exception:
            log.exception("vector store flush failed; will retry")

    def _build_in_flight(self) -> bool:
        try:
            return bool(getattr(self._services.vectors, "build_in_flight", lambda: False)())
        except Exception:
            return False

    def maintain_once(self) -> None:
        try:
            # A build already in a child is finished whatever the holds say: its copy is taken.
            if not self._build_in_flight() and self._hold():
                return
            self._similarity_held_since = None
            self._services.vectors.maintain()
        except Exception:
            log.exception("vector index maintenance failed; will retry")

    def stop(self) -> None:
        self._halt.set()
