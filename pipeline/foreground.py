"""Requests in flight that a process's background work gives way to.

In the embedded default the web process answers recalls and also does the vector stage's work
(upserts, SIMILAR_TO searches, shard flushes) on threads of its own. ``qdrant_edge`` holds the
GIL for every call, and Python hands the GIL between busy threads only every few milliseconds,
so while an import flows a recall shares the process with that work and runs several times
slower (docs/benchmarks-log.md, issue 21, "Recall yields nothing to the import"). Here the
requests that must answer promptly (recall, ``/health``) mark themselves in flight, and the
background work, cut into short steps, waits before each step until none is, for at most
``max_wait_s``: under a continuous stream of recalls the background work still advances, one
step per ``max_wait_s`` at worst.

A request's own store calls never wait for it (or for another request): the wait applies only
outside a request, which a context variable tells (it follows a request into the thread pool).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from contextlib import contextmanager
from typing import Iterator

_IN_REQUEST: contextvars.ContextVar[bool] = contextvars.ContextVar("mempipe_foreground_request", default=False)


class Foreground:
    """Counts the foreground requests in flight; ``give_way`` waits (bounded) until there are none."""

    def __init__(self, max_wait_s: float):
        self._max_wait_s = max_wait_s
        self._lock = threading.Lock()
        self._in_flight = 0
        self._idle = threading.Event()
        self._idle.set()
        self.waits = 0  # steps that found a request in flight (tests, and a look with a debugger)

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self._idle.clear()

    def leave(self) -> None:
        with self._lock:
            self._in_flight -= 1
            if self._in_flight <= 0:
                self._in_flight = 0
                self._idle.set()

    @contextmanager
    def request(self) -> Iterator[None]:
        """A foreground request, from its arrival to its answer; its own calls never wait."""
        token = _IN_REQUEST.set(True)
        self.enter()
        try:
            yield
        finally:
            self.leave()
            _IN_REQUEST.reset(token)

    def give_way(self) -> bool:
        """Before a background step: wait until no foreground request is in flight, at most
        ``max_wait_s``. True when it waited. Never waits inside a request, nor when turned off."""
        if self._max_wait_s <= 0 or _IN_REQUEST.get() or self._idle.is_set():
            return False
        self.waits += 1
        self._idle.wait(self._max_wait_s)
        return True

    async def give_way_async(self, poll_s: float = 0.005) -> bool:
        """``give_way`` for work on the event loop (accepting a batch): it polls instead of
        blocking the loop, which the request it waits for needs to finish. True when it waited."""
        if self._max_wait_s <= 0 or _IN_REQUEST.get() or self._idle.is_set():
            return False
        self.waits += 1
        deadline = time.monotonic() + self._max_wait_s
        while not self._idle.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(poll_s)
        return True


def never_wait() -> bool:
    """``give_way`` of a process with no foreground to yield to (workers, tests)."""
    return False
