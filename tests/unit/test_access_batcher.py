"""Recall's last_accessed updates: gathered in memory, sent in batches off the request path."""

from __future__ import annotations

import time

from api.access import AccessBatcher


class Recorder:
    def __init__(self, fail: int = 0):
        self.sent: list[tuple[list[str], str]] = []
        self.fail = fail

    def __call__(self, ids, at):
        if self.fail:
            self.fail -= 1
            raise ConnectionError("broker down")
        self.sent.append((ids, at))


def test_ids_are_merged_into_one_message_with_the_latest_time():
    send = Recorder()
    batcher = AccessBatcher(send, interval_s=60)
    batcher.record(["a", "b"], "2026-01-01T00:00:01+00:00")
    batcher.record(["b", "c"], "2026-01-01T00:00:03+00:00")
    batcher.record(["a"], "2026-01-01T00:00:02+00:00")
    assert send.sent == []  # nothing on the request path
    assert batcher.flush() == 3
    assert send.sent == [(["a", "b", "c"], "2026-01-01T00:00:03+00:00")]
    assert batcher.flush() == 0 and len(send.sent) == 1


def test_failed_send_keeps_ids_for_the_next_round():
    send = Recorder(fail=1)
    batcher = AccessBatcher(send, interval_s=60)
    batcher.record(["a"], "2026-01-01T00:00:01+00:00")
    assert batcher.flush() == 0
    batcher.record(["b"], "2026-01-01T00:00:02+00:00")
    assert batcher.flush() == 2
    assert send.sent == [(["a", "b"], "2026-01-01T00:00:02+00:00")]


def test_pending_ids_are_bounded_oldest_dropped_first():
    send = Recorder()
    batcher = AccessBatcher(send, interval_s=60, max_pending=2)
    batcher.record(["a", "b", "c"], "t")
    batcher.flush()
    assert send.sent == [(["b", "c"], "t")]


def test_background_thread_sends_and_stop_flushes_the_rest():
    send = Recorder()
    batcher = AccessBatcher(send, interval_s=0.05)
    batcher.start()
    batcher.record(["a"], "t1")
    deadline = time.monotonic() + 5
    while not send.sent and time.monotonic() < deadline:
        time.sleep(0.01)
    assert send.sent == [(["a"], "t1")]
    batcher.record(["b"], "t2")
    batcher.stop()
    assert send.sent[-1] == (["b"], "t2")


def test_zero_interval_sends_on_the_callers_thread():
    send = Recorder()
    batcher = AccessBatcher(send, interval_s=0)
    batcher.record(["a", "a", "b"], "t")
    assert send.sent == [(["a", "b"], "t")]
