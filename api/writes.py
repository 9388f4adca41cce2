"""The write path as the API sees it: enqueue durably, then (optionally) wait, bounded.

The API never writes to FalkorDB or Qdrant itself; every write goes through the broker, so a
store outage never makes a write fail. One exception, because the spec's answer needs it:
``DELETE /memory/by-tag`` reports how many memories it deleted, so it deletes them from the
graph while the request waits (``pipeline.tag_delete``), and a graph outage answers 503.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable

import redis
from starlette.concurrency import run_in_threadpool

from api.coalescer import WriteCoalescer
from api.waiter import CompletionWaiter
from pipeline.config import Settings
from pipeline.errors import Overloaded, Unavailable
from pipeline.records import MemoryRecord
from pipeline.tracking import PipelineTracker

log = logging.getLogger(__name__)


def broker_down(exc: Exception, nothing_done: str) -> Unavailable:
    """The 503 for a broker failure. The exception's text (host, port) goes to the log, never
    to the caller: the answer says only what did not happen."""
    log.warning("queue broker unreachable: %s", exc)
    return Unavailable(f"the queue broker is unreachable; {nothing_done}")


@dataclass(frozen=True)
class Enqueuers:
    """The actors' ``send`` functions (injected so unit tests can record instead)."""

    persist: Callable[[list[dict[str, Any]]], Any]
    update: Callable[[str, dict[str, Any]], Any]
    delete: Callable[[list[str]], Any]
    access: Callable[[list[str], str], Any]
    link: Callable[[str, list[dict[str, Any]], str], Any] | None = None  # (request id, links, at)
    enrich: Callable[[list[str]], Any] | None = None  # re-queue enrichment


@dataclass(frozen=True)
class WriteOutcome:
    done: bool
    state: str


@dataclass(frozen=True)
class WriteTuning:
    """The write path's settings in seconds (``from_settings``; the defaults live in Settings)."""

    wait_seconds: float
    coalesce_window_s: float
    coalesce_max_wait_s: float
    coalesce_max_items: int
    max_pending: int
    retry_after_s: int
    admit_cache_s: float

    @classmethod
    def from_settings(cls, settings: Settings) -> WriteTuning:
        return cls(
            wait_seconds=settings.write_wait_seconds,
            coalesce_window_s=settings.write_coalesce_window_ms / 1000,
            coalesce_max_wait_s=settings.write_coalesce_max_wait_ms / 1000,
            coalesce_max_items=settings.write_coalesce_max_items,
            max_pending=settings.backpressure_max_pending,
            retry_after_s=settings.backpressure_retry_after_s,
            admit_cache_s=settings.backpressure_check_interval_ms / 1000,
        )


class WritePath:
    def __init__(self, tracker: PipelineTracker, enqueue: Enqueuers, waiter: CompletionWaiter, tuning: WriteTuning):
        self._tracker = tracker
        self._enqueue = enqueue
        self._waiter = waiter
        self._wait_seconds = tuning.wait_seconds
        self._tuning = tuning
        self._backlog: tuple[int, float] | None = None  # (in flight, when read) for admit()
        self._coalescer = WriteCoalescer(self._send_records, tuning.coalesce_window_s, tuning.coalesce_max_items,
                                         tuning.coalesce_max_wait_s)

    def _send_records(self, messages: list[dict[str, Any]]) -> None:
        """Queue records durably: pending state first, then one persist message for all."""
        ids = [m["id"] for m in messages]
        self._tracker.mark_queued(messages, clear_tombstones=True)  # one round trip for both
        try:
            self._enqueue.persist(messages)
        except Exception:
            self._tracker.discard(ids)  # best effort: the write was not accepted
            raise
        backlog = self._backlog
        if backlog is not None:  # what this process just queued counts before the next read
            self._backlog = (backlog[0] + len(messages), backlog[1])

    def check_capacity(self) -> None:
        """Raise ``Overloaded`` (429) while the backlog is past the bound (sync: call in a thread)."""
        self._raise_if_over(self._tracker.inflight_count())

    def _raise_if_over(self, pending: int) -> None:
        if pending > self._tuning.max_pending:
            raise Overloaded(
                f"the pipeline is {pending} memories behind (bound {self._tuning.max_pending}); retry later",
                self._tuning.retry_after_s,
            )

    async def admit(self) -> None:
        """429 past the backlog bound. The backlog is read at most once per ``admit_cache_s``
        and shared by the requests of that interval: per request, the read was a thread hop
        and a broker round trip, each a scheduling wait on a busy machine. The bound may be
        overshot by what arrives within the interval, which is what a bound on a queue
        that is drained concurrently allows anyway."""
        now = time.monotonic()
        if self._backlog is None or now - self._backlog[1] >= self._tuning.admit_cache_s:
            try:
                pending = await run_in_threadpool(self._tracker.inflight_count)
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                self._backlog = None
                raise broker_down(exc, "nothing was stored") from None
            self._backlog = (pending, time.monotonic())
        self._raise_if_over(self._backlog[0])

    async def store_many(self, records: list[MemoryRecord]) -> None:
        """Queue a batch as one persist message; returns once it is durably on the broker."""
        if not records:
            return
        try:
            await run_in_threadpool(self._send_records, [r.to_message() for r in records])
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise broker_down(exc, "nothing was stored") from None

    async def _submit(self, memory_id: str, send: Callable[[], Any], wait: bool, queued_state: str, *, coalesced: bool = False) -> WriteOutcome:
        future = self._waiter.expect(memory_id) if wait else None
        try:
            if coalesced:
                await send()
            else:
                await run_in_threadpool(send)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            if future is not None:
                self._waiter.forget(memory_id, future)
            raise broker_down(exc, "nothing was stored") from None
        if future is None:
            return WriteOutcome(False, queued_state)
        event = await self._waiter.wait(memory_id, future, self._wait_seconds)
        return WriteOutcome(True, event["state"]) if event else WriteOutcome(False, queued_state)

    async def store(self, record: MemoryRecord, wait: bool) -> WriteOutcome:
        message = record.to_message()
        return await self._submit(record.id, lambda: self._coalescer.submit(message), wait, "queued", coalesced=True)

    async def update(self, memory_id: str, changes: dict[str, Any], wait: bool) -> WriteOutcome:
        return await self._submit(memory_id, lambda: self._enqueue.update(memory_id, changes), wait, "queued")

    async def delete(self, memory_id: str, wait: bool) -> WriteOutcome:
        def send() -> None:
            self._tracker.tombstone([memory_id])
            self._enqueue.delete([memory_id])

        return await self._submit(memory_id, send, wait, "queued")

    async def associate(self, request_id: str, links: list[dict[str, Any]], at: str, wait: bool) -> WriteOutcome:
        """Queue edges to be merged; the request id is what the waiter listens for."""
        return await self._submit(request_id, lambda: self._enqueue.link(request_id, links, at), wait, "queued")

    async def reprocess(self, memory_ids: list[str]) -> None:
        try:
            await run_in_threadpool(self._enqueue.enrich, memory_ids)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise broker_down(exc, "nothing was queued") from None

    def record_access(self, memory_ids: list[str], at: str) -> None:
        self._enqueue.access(memory_ids, at)
