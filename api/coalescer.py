"""Gathers concurrent single writes into one persist message.

Dramatiq costs about a millisecond of CPU per message at every stage, so one message per
``POST /memory`` caps single writes at a few hundred a second on a small machine. Writes
that arrive within ``window`` of each other share one message instead; each request still
answers only after its message is durably on the broker (its future resolves after the send).
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from starlette.concurrency import run_in_threadpool


class WriteCoalescer:
    def __init__(self, send_batch: Callable[[list[dict[str, Any]]], None], window_s: float, max_items: int):
        self._send_batch = send_batch
        self._window = window_s
        self._max = max_items
        self._buffer: list[tuple[dict[str, Any], asyncio.Future]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task] = set()

    async def submit(self, message: dict[str, Any]) -> None:
        """Returns once ``message`` is on the broker; raises what the send raised."""
        if self._window <= 0:
            await run_in_threadpool(self._send_batch, [message])
            return
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._buffer.append((message, future))
        if len(self._buffer) >= self._max:
            self._flush()
        elif self._timer is None:
            self._timer = loop.call_later(self._window, self._flush)
        await future

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._buffer = self._buffer, []
        if batch:
            task = asyncio.get_running_loop().create_task(self._send(batch))
            self._tasks.add(task)  # keep a reference until done (the loop holds tasks weakly)
            task.add_done_callback(self._tasks.discard)

    async def _send(self, batch: list[tuple[dict[str, Any], asyncio.Future]]) -> None:
        try:
            await run_in_threadpool(self._send_batch, [message for message, _ in batch])
        except Exception as exc:
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
        else:
            for _, future in batch:
                if not future.done():
                    future.set_result(None)
