"""Relations of the likely results, fetched while the rest of the recall runs.

Recall hydrates ``relations`` (ids, type, strength, direction) of the results it returns,
which it knows only after scoring. The nearest vector hits are nearly always among them, so
their edges are requested as soon as the vector search answers, on another thread, while
the supersession check and scoring run. At hydration time the returned ids that the
prefetch covered cost nothing; the others are fetched then, as before.
"""

from __future__ import annotations

import logging
from concurrent.futures import Executor, Future
from typing import Callable

from pipeline.query.graph_reads import Edge

log = logging.getLogger(__name__)

EdgeFetch = Callable[[list[str]], dict[str, list[Edge]]]


class RelationPrefetch:
    def __init__(self, submit: Callable[..., Future], fetch: EdgeFetch, size: int):
        self._submit = submit  # Executor.submit, or a wrapper that keeps the request's context
        self._fetch = fetch
        self._size = size
        self._pending: list[tuple[frozenset[str], Future]] = []
        self._requested: set[str] = set()

    def __call__(self, ranked_ids: list[str]) -> None:
        """Start fetching the edges of the first ``size`` ids (vector hits, nearest first)."""
        wanted = [i for i in ranked_ids[: self._size] if i not in self._requested]
        if wanted:
            self._requested.update(wanted)
            self._pending.append((frozenset(wanted), self._submit(self._fetch, wanted)))

    def edges(self, memory_ids: list[str]) -> dict[str, list[Edge]]:
        """Edges of ``memory_ids``: from the prefetch where it covered them, fetched now otherwise."""
        found: dict[str, list[Edge]] = {}
        covered: set[str] = set()
        wanted = set(memory_ids)
        for ids, future in self._pending:
            if not ids & wanted:
                continue  # not needed: never wait for it
            try:
                result = future.result()
            except Exception as exc:  # fetched again below, where a failure degrades as before
                log.warning("relation prefetch failed: %s", exc)
                continue
            covered |= ids
            found.update({k: v for k, v in result.items() if k in wanted})
        missing = [i for i in memory_ids if i not in covered]
        if missing:
            found.update(self._fetch(missing))
        return found


def submitter(executor: Executor | None) -> Callable[..., Future]:
    """``executor.submit`` that carries the caller's context (request id); inline without one."""
    import contextvars

    def submit(fn, *args) -> Future:
        if executor is not None:
            return executor.submit(contextvars.copy_context().run, fn, *args)
        done: Future = Future()
        try:
            done.set_result(fn(*args))
        except Exception as exc:
            done.set_exception(exc)
        return done

    return submit
