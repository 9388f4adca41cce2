"""ops.bench.busy: per-process CPU sampled over a window, split at a mark."""

import os
import time

from ops.bench.busy import BusySampler, format_report, runqueue_wait_s


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_samples_cpu_and_splits_at_a_mark():
    sampler = BusySampler({"me": lambda: [os.getpid()]}, interval=0.02).start()
    _spin(0.2)
    sampler.mark("done")
    time.sleep(0.15)
    sampler.stop()
    report = sampler.report(100, split="done")
    assert set(report) >= {"all", "before_done", "after_done", "runq_wait_s"}
    before, after = report["before_done"]["parts"]["me"], report["after_done"]["parts"]["me"]
    assert before["cpu_s"] >= 0.1  # the spin, whatever share of the cores this process got
    assert before["ms_per_memory"] == round(before["cpu_s"] * 10, 3) or abs(before["ms_per_memory"] - before["cpu_s"] * 10) < 0.01
    assert after["cpu_s"] < before["cpu_s"]  # sleeping costs (next to) nothing
    assert report["all"]["parts"]["me"]["cpu_s"] >= before["cpu_s"]
    lines = format_report("label", report)
    assert any("before_done" in line and "me " in line for line in lines)


def test_a_process_that_exits_keeps_its_last_cpu_and_late_parts_are_added():
    sampler = BusySampler({}, interval=0.02).start()
    sampler.add("gone", 2**22 + 12345)  # no such pid: read as 0, never negative
    time.sleep(0.06)
    sampler.stop()
    parts = sampler.report(1)["all"]["parts"]
    assert parts["gone"]["cpu_s"] == 0.0
    assert runqueue_wait_s(os.getpid()) >= 0.0
