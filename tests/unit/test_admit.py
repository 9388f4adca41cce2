"""Backpressure in the web process: one backlog reading per interval, plus its own writes."""

import asyncio
from dataclasses import replace

import pytest

from api.writes import Enqueuers, WritePath, WriteTuning
from pipeline.config import Settings
from pipeline.errors import Overloaded


class FakeTracker:
    def __init__(self, backlog: int):
        self.backlog, self.reads = backlog, 0

    def inflight_count(self) -> int:
        self.reads += 1
        return self.backlog

    def mark_queued(self, records, *, clear_tombstones=False):
        self.backlog += len(records)


def _path(tracker, interval: float, bound: int = 10) -> WritePath:
    sent = []
    enqueue = Enqueuers(persist=sent.append, update=None, delete=None, access=None)
    tuning = replace(WriteTuning.from_settings(Settings()), max_pending=bound, coalesce_window_s=0, admit_cache_s=interval)
    return WritePath(tracker, enqueue, waiter=None, tuning=tuning)


def test_one_reading_serves_an_interval_and_counts_own_writes():
    async def scenario():
        tracker = FakeTracker(backlog=0)
        writes = _path(tracker, interval=60)
        for _ in range(5):
            await writes.admit()
        assert tracker.reads == 1
        writes._send_records([{"id": str(i)} for i in range(11)])  # this process queued past the bound
        with pytest.raises(Overloaded):
            await writes.admit()
        assert tracker.reads == 1

    asyncio.run(scenario())


def test_zero_interval_reads_every_time():
    async def scenario():
        tracker = FakeTracker(backlog=3)
        writes = _path(tracker, interval=0)
        await writes.admit()
        await writes.admit()
        assert tracker.reads == 2
        tracker.backlog = 11
        with pytest.raises(Overloaded):
            await writes.admit()

    asyncio.run(scenario())
