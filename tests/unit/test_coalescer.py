"""The write coalescer: a batch leaves once quiet for the window or at max_wait, never a second
send while one is in flight (group commit) unless the buffer is full."""

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


class Recorder:
    """A send that returns at once; records each batch's ids and when it left."""

    def __init__(self):
        self.batches: list[list[str]] = []
        self.sent_at: list[float] = []

    def __call__(self, batch):
        self.batches.append([m["id"] for m in batch])
        self.sent_at.append(time.monotonic())


def test_a_lone_write_leaves_after_the_window():
    send = Recorder()

    async def main():
        coalescer = WriteCoalescer(send, window_s=0.05, max_items=100, max_wait_s=5.0)
        started = time.monotonic()
        await asyncio.wait_for(coalescer.submit({"id": "a"}), timeout=5)
        return time.monotonic() - started

    waited = asyncio.run(main())
    assert send.batches == [["a"]]
    assert 0.045 <= waited < 2  # the window, not max_wait


def test_writes_that_keep_coming_leave_as_one_message_once_quiet():
    send = Recorder()

    async def main():
        coalescer = WriteCoalescer(send, window_s=0.1, max_items=100, max_wait_s=10.0)
        writes = []
        for i in range(6):  # 6 writes, 30 ms apart: each joins before the batch is quiet
            writes.append(asyncio.ensure_future(coalescer.submit({"id": str(i)})))
            await asyncio.sleep(0.03)
        assert send.batches == []  # still gathering: the window restarted with every write
        last_at = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*writes), timeout=5)
        return last_at

    last_at = asyncio.run(main())
    assert send.batches == [["0", "1", "2", "3", "4", "5"]]
    assert send.sent_at[0] - last_at >= 0.06  # left once quiet, not at the first write's window


def test_a_steady_stream_is_cut_at_max_wait():
    send = Recorder()

    async def main():
        coalescer = WriteCoalescer(send, window_s=0.1, max_items=1000, max_wait_s=0.25)
        started = time.monotonic()
        writes = []
        while time.monotonic() - started < 0.8:  # never quiet for the window
            writes.append(asyncio.ensure_future(coalescer.submit({"id": str(len(writes))})))
            await asyncio.sleep(0.02)
        await asyncio.wait_for(asyncio.gather(*writes), timeout=5)
        return started, len(writes)

    started, count = asyncio.run(main())
    assert len(send.batches) >= 2  # cut by max_wait although writes never paused
    assert sum(send.batches, []) == [str(i) for i in range(count)]  # each once, in order
    assert send.sent_at[0] - started < 0.6  # the first batch did not wait for the stream to end


def test_writes_arriving_during_a_send_wait_for_it_and_go_together():
    send = GatedSend()

    async def main():
        coalescer = WriteCoalescer(send, window_s=0.02, max_items=100, max_wait_s=0.05)
        first = await _send_first(coalescer, send)
        later = [asyncio.ensure_future(coalescer.submit({"id": str(i)})) for i in range(5)]
        await asyncio.sleep(0.2)  # far past window and max_wait
        assert send.batches == [["a"]]  # gathered, not sent, while the first send is in flight
        send.release.set()
        started = time.monotonic()
        await asyncio.wait_for(asyncio.gather(first, *later), timeout=5)
        return time.monotonic() - started

    waited = asyncio.run(main())
    assert send.batches == [["a"], ["0", "1", "2", "3", "4"]]
    assert waited < 2  # already due: went when the first send returned


def test_a_failed_send_fails_its_writers_only_and_the_gathered_ones_still_go():
    send = GatedSend(fail_first=True)

    async def main():
        coalescer = WriteCoalescer(send, window_s=0.02, max_items=100)
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
