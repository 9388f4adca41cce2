"""Gathers concurrent single writes into one persist message.

Dramatiq costs about a millisecond of CPU per message at every stage, so one message per
``POST /memory`` caps single writes at a few hundred a second on a small machine. Writes
that arrive close together share one message instead; each request still answers only after
its message is durably on the broker (its future resolves after the send).

When a batch leaves:

- **Quiet for ``window``.** The batch waits until no write has joined it for ``window``
  (a debounce), so a stream of writes keeps filling it. A lone write at idle waits
  ``window`` and goes.
- **At most ``max_wait``** after its first write, however steady the stream.
- **Group commit.** While a send is on its way to the broker, the writes that arrive
  meanwhile wait in the buffer (no second send); when it returns they leave as soon as they
  are due by the two rules above. Only a full buffer (``max_items``) starts a second send
  while one is in flight.

Why the debounce: clients that write one memory at a time send their next write as soon as
the last is answered, so under load the writes come in waves a few milliseconds apart. A
fixed window cut each wave into two or three messages; waiting for the wave to end sends one,
and every later stage (persist, embed, vectors, their broker and graph round trips) then
works on the whole wave, which lowers the CPU of a single write, all processes together
(docs/benchmarks-log.md, issue 6 session 17).
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from starlette.concurrency import run_in_threadpool

# uvloop's clock and timers tick in milliseconds: a timer may fire up to a tick before the
# moment it was set for, which must not count as "not yet due" (it would re-arm in a spin).
_TIMER_SLACK_S = 0.001


class WriteCoalescer:
    def __init__(self, send_batch: Callable[[list[dict[str, Any]]], None], window_s: float, max_items: int,
                 max_wait_s: float | None = None):
        self._send_batch = send_batch
        self._window = window_s
        self._max_wait = max(window_s, window_s if max_wait_s is None else max_wait_s)
        self._max = max_items
        self._buffer: list[tuple[dict[str, Any], asyncio.Future]] = []
        self._first_at = 0.0  # loop time the buffer's first write arrived
        self._last_at = 0.0  # loop time its latest write arrived
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
        now = loop.time()
        if not self._buffer:
            self._first_at = now
        self._last_at = now
        self._buffer.append((message, future))
        if len(self._buffer) >= self._max:
            self._flush()
        elif self._timer is None and not self._in_flight:
            self._timer = loop.call_at(self._due(), self._on_due)
        # else: the armed timer checks the quiet time again when it fires, or the send in
        # flight decides when it returns (group commit)
        await future

    def _due(self) -> float:
        """When the buffer leaves: quiet for the window, or its first write waited max_wait."""
        return min(self._last_at + self._window, self._first_at + self._max_wait)

    def _on_due(self) -> None:
        self._timer = None
        self._flush_when_due()

    def _flush_when_due(self) -> None:
        if not self._buffer or self._in_flight:
            return
        loop = asyncio.get_running_loop()
        due = self._due()
        if loop.time() >= due - _TIMER_SLACK_S:
            self._flush()
        elif self._timer is None:  # a write joined since the timer was set: wait for quiet again
            self._timer = loop.call_at(due, self._on_due)

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
            self._flush_when_due()  # what gathered during this send goes once it is due
