"""A graph read started beside a recall's own work, its answer taken when it is needed.

A recall's metadata sidecar is a FalkorDB round trip that depends only on the query's keywords,
and its neighbour-pair read only on the pool's ids. Run inline, each waits on a socket while the
web's core sits idle; started first, the graph works on it (in its own process) while the web
embeds the query and searches the Edge shard, or reads supersession and relevance.
"""

from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, TypeVar

T = TypeVar("T")


class Beside:
    """Starts a call on a small pool of threads; ``workers`` 0 runs it inline, at once."""

    def __init__(self, workers: int):
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="recall-beside") if workers > 0 else None

    def start(self, call: Callable[[], T]) -> Callable[[], T]:
        """Begin ``call``; the returned function waits for its value (or raises what it raised).

        The call runs in a copy of the caller's context, so its log lines keep the request's id.
        A call that finds every worker busy waits its turn; none waits on another, so none can
        deadlock."""
        if self._pool is None:
            value = call()
            return lambda: value
        return self._pool.submit(contextvars.copy_context().run, call).result

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


INLINE = Beside(0)
