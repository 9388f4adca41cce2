"""The write coalescer's group commit: writes that arrive while a send is in flight leave
together as soon as it returns."""

from __future__ import annotations

import asyncio
import threading
import time

from api.coalescer import WriteCoalescer


class GatedSend:
    """A send that blocks (in the thread pool) until released; records each batch's ids."""

    def __init__(self, fail_first: bool = False):
        self.batches: list[list[str]] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self._fail_first = fail_first

    def __call__(self, batch):
        self.batches.append([m["id"] for m in batch])
        if len(self.batches) == 1:
            self.entered.set()
            assert self.release.wait(10)
            if self._fail_first:
                raise ConnectionError("broker down")


async def _until(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.001)


async def _send_first(coalescer: WriteCoalescer, send: GatedSend) -> asyncio.Future:
    """Submit write "a" and send it at once (not after the window); returns its future once
    its send is in flight."""
    first = asyncio.ensure_future(coalescer.submit({"id": "a"}))
    await asyncio.sleep(0)  # let it reach the buffer
    coalescer._flush()
    await _until(send.entered.is_set)
    return first


def test_writes_arriving_during_a_send_go_together_when_it_returns_without_a_timer():
    send = GatedSend()

    async def main():
        # A window far longer than the test: the second batch must not wait for a timer.
        coalescer = WriteCoalescer(send, window_s=30.0, max_items=100)
        first = await _send_first(coalescer, send)
        later = [asyncio.ensure_future(coalescer.submit({"id": str(i)})) for i in range(5)]
        await asyncio.sleep(0.05)
        assert send.batches == [["a"]]  # gathered, not sent, while the first send is in flight
        send.release.set()
        started = time.monotonic()
        await asyncio.wait_for(asyncio.gather(first, *later), timeout=5)
        return time.monotonic() - started

    waited = asyncio.run(main())
    assert send.batches == [["a"], ["0", "1", "2", "3", "4"]]
    assert waited < 5  # went when the first send returned, not after the window


def test_a_failed_send_fails_its_writers_only_and_the_gathered_ones_still_go():
    send = GatedSend(fail_first=True)

    async def main():
        coalescer = WriteCoalescer(send, window_s=30.0, max_items=100)
        first = await _send_first(coalescer, send)
        later = asyncio.ensure_future(coalescer.submit({"id": "b"}))
        await asyncio.sleep(0.01)
        send.release.set()
        return await asyncio.wait_for(asyncio.gather(first, later, return_exceptions=True), timeout=5)

    first, later = asyncio.run(main())
    assert isinstance(first, ConnectionError) and later is None
    assert send.batches == [["a"], ["b"]]


def test_a_full_buffer_is_sent_even_while_a_send_is_in_flight():
    send = GatedSend()

    async def main():
        coalescer = WriteCoalescer(send, window_s=30.0, max_items=3)
        first = await _send_first(coalescer, send)
        full = [asyncio.ensure_future(coalescer.submit({"id": str(i)})) for i in range(3)]
        await asyncio.wait_for(asyncio.gather(*full), timeout=5)  # done before the first returns
        assert send.batches == [["a"], ["0", "1", "2"]]
        send.release.set()
        await asyncio.wait_for(first, timeout=5)

    asyncio.run(main())
