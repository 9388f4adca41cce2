"""Gathers concurrent single writes into one persist message.

Dramatiq costs about a millisecond of CPU per message at every stage, so one message per
``POST /memory`` caps single writes at a few hundred a second on a small machine. Writes
that arrive within ``window`` of each other share one message instead; each request still
answers only after its message is durably on the broker (its future resolves after the send).

Under load the window alone gathers little: at a few hundred writes a second, 2 ms holds one
or two of them. So sending is also a group commit: while a send is on its way to the broker,
the writes that arrive meanwhile wait in the buffer and leave together the moment it returns
(no timer). The busier the process, the longer a send takes and the more writes share the
next one, so batches grow with the load by themselves; at idle nothing changes (one write
waits ``window`` and goes). Only a full buffer (``max_items``) starts a second send while one
is in flight.
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
        self._in_flight = 0  # sends on their way to the broker

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
        elif self._timer is None and not self._in_flight:
            self._timer = loop.call_later(self._window, self._flush)
        # else: a send is in flight; its completion flushes the buffer (group commit)
        await future

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._buffer = self._buffer, []
        if batch:
            self._in_flight += 1
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
        finally:
            self._in_flight -= 1
            if self._buffer and not self._in_flight:
                self._flush()  # what gathered during this send goes now: it has waited long enough
