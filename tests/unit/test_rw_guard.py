"""The reader/writer guard around the Edge shard (pipeline.vectors.rw_guard, issue 21)."""

from __future__ import annotations

import threading
import time

import pytest

from pipeline.vectors.rw_guard import ReadWriteGuard

WAIT_S = 5  # bounds on waits for another thread: far above what any step here takes


def _in_thread(target) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def test_shared_holders_overlap_and_exclusive_waits_for_them_all():
    guard = ReadWriteGuard()
    inside = threading.Barrier(2, timeout=WAIT_S)
    release = threading.Event()

    def reader():
        with guard.shared():
            inside.wait()  # both readers are in at once
            release.wait(WAIT_S)

    readers = [_in_thread(reader), _in_thread(reader)]
    time.sleep(0.05)
    got = threading.Event()
    writer = _in_thread(lambda: (guard.acquire_exclusive(), got.set(), guard.release_exclusive()))
    assert not got.wait(0.2)  # readers still in
    release.set()
    assert got.wait(WAIT_S)
    for thread in readers + [writer]:
        thread.join(WAIT_S)


def test_a_waiting_exclusive_holder_goes_before_new_shared_ones():
    guard = ReadWriteGuard()
    guard.acquire_shared()  # this thread reads
    order: list[str] = []
    writer = _in_thread(lambda: (guard.acquire_exclusive(), order.append("swap"), guard.release_exclusive()))
    deadline = time.monotonic() + WAIT_S
    while not guard.busy() and time.monotonic() < deadline:
        time.sleep(0.005)
    assert guard.busy()
    late = _in_thread(lambda: (guard.acquire_shared(), order.append("search"), guard.release_shared()))
    time.sleep(0.1)
    assert order == []  # the late search waits behind the waiting swap
    guard.acquire_shared()  # re-entered by a holder: no deadlock behind the waiting swap
    guard.release_shared()
    guard.release_shared()
    writer.join(WAIT_S)
    late.join(WAIT_S)
    assert order == ["swap", "search"]


def test_the_exclusive_holder_may_read_and_a_reader_may_not_upgrade():
    guard = ReadWriteGuard()
    with guard.exclusive():
        with guard.shared():
            pass
    with guard.shared():
        with pytest.raises(RuntimeError):
            guard.acquire_exclusive()
    with guard.exclusive():  # nothing left held
        assert guard.busy()
    assert not guard.busy()
