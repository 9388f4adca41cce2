"""Sizing calls into a GIL-holding binding from how long the calls before took
(pipeline.vectors.call_pacing, issue 21)."""

from __future__ import annotations

import pytest

from pipeline.vectors.call_pacing import CallPacer


def test_with_nothing_measured_the_callers_bound_is_the_size():
    pacer = CallPacer(0.010)
    assert pacer.seconds_per_item is None
    assert pacer.size(64) == 64
    assert pacer.size(0) == 1  # never an empty call


def test_a_call_is_sized_to_the_target_from_the_seconds_per_item():
    pacer = CallPacer(0.010)
    pacer.record(8, 0.040)  # 5 ms a query: a scan of a plain shard
    assert pacer.size(64) == 2
    assert pacer.size(1) == 1  # the caller's bound still wins
    slow = CallPacer(0.010)
    slow.record(1, 0.050)  # one query alone is over the target: one at a time, never none
    assert slow.size(64) == 1


def test_the_estimate_follows_a_cheaper_shard_smoothly():
    pacer = CallPacer(0.010)
    pacer.record(2, 0.010)  # 5 ms a query
    sizes = []
    for _ in range(6):  # the shard is indexed now: 0.25 ms a query
        size = pacer.size(64)
        pacer.record(size, size * 0.00025)
        sizes.append(size)
    assert sizes[0] == 2 and sizes == sorted(sizes) and sizes[-1] >= 20  # 40 at the target, approached
    pacer.record(40, 0.100)  # one call slowed tenfold by the machine
    assert 1 < pacer.size(64) < 40


def test_nonsense_measurements_are_ignored_and_bad_settings_refused():
    pacer = CallPacer(0.010)
    pacer.record(0, 0.5)
    pacer.record(3, -1.0)
    assert pacer.seconds_per_item is None
    with pytest.raises(ValueError):
        CallPacer(0)
    with pytest.raises(ValueError):
        CallPacer(0.01, smoothing=0)
