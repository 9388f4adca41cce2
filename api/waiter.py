"""Wakes waiting writes when the pipeline reports them done.

One pub/sub subscription per web process; each waiting request registers a future under its
memory id *before* enqueueing, so a completion can never slip past unnoticed.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import Callable

import orjson
import redis.asyncio as aioredis

from pipeline.tracking import DONE_CHANNEL

log = logging.getLogger(__name__)


class CompletionWaiter:
    def __init__(self, connect: Callable[[], aioredis.Redis]):
        self._connect = connect  # a fresh client per (re)subscription
        self._waiting: dict[str, list[asyncio.Future]] = defaultdict(list)
        self._task: asyncio.Task | None = None
        self._ready = asyncio.Event()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._listen(), name="completion-waiter")
        try:
            await asyncio.wait_for(self._ready.wait(), timeout=5)
        except asyncio.TimeoutError:
            log.warning("completion listener not subscribed yet; writes will answer 202 until it is")

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass

    async def _listen(self) -> None:
        backoff = 0.1
        while True:
            client = self._connect()
            pubsub = client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(DONE_CHANNEL)
                self._ready.set()
                backoff = 0.1
                async for message in pubsub.listen():
                    self._resolve(orjson.loads(message["data"]))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # broker restarts: resubscribe with backoff
                self._ready.clear()
                log.warning("completion listener lost the broker (%s); resubscribing", exc)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
            finally:
                await pubsub.aclose()
                await client.aclose()

    def _resolve(self, event: dict) -> None:
        # One message per finished batch (``ids``); ``id`` is the older one-per-memory form.
        ids = event.get("ids") or [event.get("id")]
        if not self._waiting:
            return
        for memory_id in ids:
            for future in self._waiting.pop(memory_id, []):
                if not future.done():
                    future.set_result({"id": memory_id, "op": event.get("op"), "state": event.get("state")})

    def expect(self, memory_id: str) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        self._waiting[memory_id].append(future)
        return future

    def forget(self, memory_id: str, future: asyncio.Future) -> None:
        waiting = self._waiting.get(memory_id)
        if waiting and future in waiting:
            waiting.remove(future)
            if not waiting:
                del self._waiting[memory_id]

    async def wait(self, memory_id: str, future: asyncio.Future, timeout: float) -> dict | None:
        if not self._ready.is_set() or timeout <= 0:
            self.forget(memory_id, future)
            return None
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except asyncio.TimeoutError:
            return None
        finally:
            self.forget(memory_id, future)
