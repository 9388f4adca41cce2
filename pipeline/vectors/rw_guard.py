"""A reader/writer guard: many holders share it, one holds it alone.

The Edge store uses two (pipeline.vectors.edge): one over every call into the shard (searches
and writes share it; the swap of a freshly built shard takes it alone), one over vector
writes (they share it; a build's snapshot takes it alone so that searches go on while writes
wait). No library for this is installed, hence this small class.

- **Writer-preferring**: once an exclusive holder waits, new shared holders wait behind it, so
  a steady stream of searches cannot starve a swap (the swap is short: they wait briefly).
- **Shared is re-entrant per thread**: a thread that holds it shared may take it shared again
  even while an exclusive holder waits (a write that reads the stored payload first), which
  with writer preference would otherwise deadlock.
- The exclusive holder may take it shared too (it already excludes everyone else).
- Exclusive is not re-entrant, and a thread holding it shared must not ask for it exclusive.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator


class ReadWriteGuard:
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0  # shared holds, all threads, re-entries included
        self._writer: int | None = None  # the exclusive holder's thread id
        self._writers_waiting = 0
        self._mine = threading.local()  # this thread's shared holds

    def _held_here(self) -> int:
        return getattr(self._mine, "count", 0)

    def acquire_shared(self) -> None:
        with self._cond:
            if self._held_here() == 0 and self._writer != threading.get_ident():
                while self._writer is not None or self._writers_waiting:
                    self._cond.wait()
            self._readers += 1
            self._mine.count = self._held_here() + 1

    def release_shared(self) -> None:
        with self._cond:
            self._readers -= 1
            self._mine.count = self._held_here() - 1
            if self._readers == 0:
                self._cond.notify_all()

    def acquire_exclusive(self) -> None:
        with self._cond:
            if self._held_here():
                raise RuntimeError("a shared holder asked for the guard exclusively (it would wait for itself)")
            self._writers_waiting += 1
            try:
                while self._writer is not None or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writer = threading.get_ident()

    def release_exclusive(self) -> None:
        with self._cond:
            self._writer = None
            self._cond.notify_all()

    @contextmanager
    def shared(self) -> Iterator[None]:
        self.acquire_shared()
        try:
            yield
        finally:
            self.release_shared()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        self.acquire_exclusive()
        try:
            yield
        finally:
            self.release_exclusive()

    def busy(self) -> bool:
        """Is it held or asked for exclusively now (for tests and logs)?"""
        with self._cond:
            return self._writer is not None or self._writers_waiting > 0
