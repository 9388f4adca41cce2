"""The write path as the API sees it: enqueue durably, then (optionally) wait, bounded.

The API never writes to FalkorDB or Qdrant; everything goes through the broker, so a store
outage never makes a write fail.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import redis
from starlette.concurrency import run_in_threadpool

from api.waiter import CompletionWaiter
from pipeline.errors import Unavailable
from pipeline.records import MemoryRecord
from pipeline.tracking import PipelineTracker


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


class WritePath:
    def __init__(self, tracker: PipelineTracker, enqueue: Enqueuers, waiter: CompletionWaiter, wait_seconds: float):
        self._tracker = tracker
        self._enqueue = enqueue
        self._waiter = waiter
        self._wait_seconds = wait_seconds

    async def _submit(self, memory_id: str, send: Callable[[], None], wait: bool, queued_state: str) -> WriteOutcome:
        future = self._waiter.expect(memory_id) if wait else None
        try:
            await run_in_threadpool(send)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            if future is not None:
                self._waiter.forget(memory_id, future)
            raise Unavailable(f"the queue broker is unreachable; nothing was stored ({exc})") from None
        if future is None:
            return WriteOutcome(False, queued_state)
        event = await self._waiter.wait(memory_id, future, self._wait_seconds)
        return WriteOutcome(True, event["state"]) if event else WriteOutcome(False, queued_state)

    async def store(self, record: MemoryRecord, wait: bool) -> WriteOutcome:
        message = record.to_message()

        def send() -> None:
            self._tracker.clear_tombstone(record.id)
            self._tracker.mark_queued([message])
            try:
                self._enqueue.persist([message])
            except Exception:
                self._tracker.discard([record.id])  # best effort: the write was not accepted
                raise

        return await self._submit(record.id, send, wait, "queued")

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
            raise Unavailable(f"the queue broker is unreachable; nothing was queued ({exc})") from None

    def record_access(self, memory_ids: list[str], at: str) -> None:
        self._enqueue.access(memory_ids, at)
