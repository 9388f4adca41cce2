"""The web's side of the Edge build in a child: what a start cleans up, the copy, the child's
life (pipeline.vectors.edge_swap, issue 21). The real shard's build and swap are in
tests/integration/test_edge_build.py."""

from __future__ import annotations

import os
import sys

import pytest

from pipeline.vectors.edge_swap import (BUILD, DISCARD, OLD, ChildBuild, ChildBuildOptions, ShardLayout, StepTimer, copy_shard,
                                        recover, retire_shard, sibling, warm_page_cache)
from tests.marked_dirs import marked_dir, marker


def test_a_clean_shard_is_left_alone(tmp_path):
    live = str(tmp_path / "shard")
    marked_dir(live, "live")
    assert recover(live) == [] and marker(live) == "live"


def test_a_left_over_build_or_discard_is_removed_and_the_live_shard_kept(tmp_path):
    live = str(tmp_path / "shard")
    marked_dir(live, "live")
    marked_dir(sibling(live, BUILD), "build")
    marked_dir(sibling(live, DISCARD), "discard")
    assert len(recover(live)) == 2
    assert marker(live) == "live" and sorted(os.listdir(tmp_path)) == ["shard"]


def test_an_interrupted_swap_puts_the_old_shard_back_whatever_the_live_dir_holds(tmp_path):
    live = str(tmp_path / "shard")
    marked_dir(sibling(live, OLD), "old")  # between the renames: no live dir
    recover(live)
    assert marker(live) == "old" and os.listdir(tmp_path) == ["shard"]
    marked_dir(sibling(live, OLD), "old again")  # after both renames: the build is live, not yet caught up
    recover(live)
    assert marker(live) == "old again" and os.listdir(tmp_path) == ["shard"]


def test_the_copy_replaces_a_stale_one(tmp_path):
    live, copy = str(tmp_path / "shard"), str(tmp_path / "shard.build")
    marked_dir(live, "live")
    os.makedirs(os.path.join(live, "segments", "s1"))
    marked_dir(copy, "stale")
    copy_shard(live, copy)
    assert marker(copy) == "live" and os.path.isdir(os.path.join(copy, "segments", "s1"))


def test_a_child_reports_its_exit_and_a_stop_ends_it_and_removes_its_copy(tmp_path):
    live = str(tmp_path / "shard")
    marked_dir(sibling(live, BUILD), "copy")
    failing = ChildBuild(live, ShardLayout(8), ChildBuildOptions(python="/bin/false"))
    failing._process.wait(30)
    assert failing.poll() == 1
    slow = tmp_path / "slow.py"
    slow.write_text("import time\ntime.sleep(60)\n")
    # a stand-in interpreter: ``<python> -m pipeline.vectors.edge_build ...`` sleeps instead
    sleeper = tmp_path / "sleeper"
    sleeper.write_text(f"#!/bin/sh\nexec {sys.executable} {slow}\n")
    sleeper.chmod(0o755)
    running = ChildBuild(live, ShardLayout(8), ChildBuildOptions(python=str(sleeper)))
    assert running.poll() is None
    running.stop()
    assert running.poll() is not None and not os.path.exists(sibling(live, BUILD))


@pytest.mark.parametrize("layout", [ShardLayout(384, "cached", "int8"), ShardLayout(8, "pinned", "none", vectors_on_disk=False),
                                    ShardLayout(384, "cold", "int8", graph=False)], ids=["graph", "in-ram", "codes-only"])
def test_the_child_opens_the_copy_with_the_layout_it_was_given(tmp_path, layout):
    from pipeline.vectors.edge_build import parse

    child = ChildBuild(str(tmp_path / "shard"), layout, ChildBuildOptions(python="/bin/true"))
    child._process.wait(30)
    command = child._process.args
    module = command.index("pipeline.vectors.edge_build")
    args, parsed = parse(command[module + 1:])
    assert parsed == layout and args.path == child.build_path


def test_the_child_imports_the_code_the_web_runs_wherever_it_was_started(tmp_path, monkeypatch):
    import pipeline
    from pipeline.vectors.edge_swap import _child_env

    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    root = os.path.dirname(os.path.dirname(os.path.abspath(pipeline.__file__)))
    assert _child_env()["PYTHONPATH"] == root + os.pathsep + "/elsewhere"


def test_the_setting_gives_the_store_a_child_niced_as_the_background_processes(tmp_path):
    from pipeline.config import Settings
    from pipeline.vectors import build_vector_store

    on = build_vector_store(Settings(MEMPIPE_DATA_DIR=str(tmp_path), EMBEDDED_BACKGROUND_NICE=7, EDGE_BUILD_RETRY_S=60), 8)
    assert on._child_build.nice == 7 and on._child_build.retry_s == 60
    assert Settings().edge_build_in_child  # the embedded default builds outside the web
    off = build_vector_store(Settings(MEMPIPE_DATA_DIR=str(tmp_path), EDGE_BUILD_IN_CHILD=False), 8)
    assert off._child_build is None  # optimize() in the web, as before


def test_the_warm_up_reads_every_file_but_the_log_whole_what_searches_walk_first_and_skips_one_gone(tmp_path, monkeypatch):
    shard = tmp_path / "shard.build"
    for folder in ("segments/a/vector_storage", "segments/a/payload_storage", "segments/a/vector_index", "wal"):
        (shard / folder).mkdir(parents=True)
    sizes = {"segments/a/payload_storage/page_0.dat": 7_000, "segments/a/vector_storage/matrix.dat": 9_000,
             "segments/a/vector_storage/quantized.data": 10_000, "segments/a/vector_index/links.bin": 3_000,
             "segments/a/segment.json": 0}
    for name, size in sizes.items():
        (shard / name).write_bytes(os.urandom(size))
    (shard / "wal" / "open-1").write_bytes(os.urandom(50_000))  # the open has read it: not again
    os.symlink(tmp_path / "nowhere", shard / "segments" / "a" / "gone")  # listed, then unreadable
    opened = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda name, *a, **k: opened.append(os.path.basename(name)) or real_open(name, *a, **k))
    # a chunk smaller than the files: each is read to its end, not once
    assert warm_page_cache(str(shard), chunk=4096, available=lambda: None) == sum(sizes.values())
    assert set(opened[:2]) == {"quantized.data", "links.bin"} and "open-1" not in opened
    assert warm_page_cache(str(shard), chunk=4096, available=lambda: 2 * sum(sizes.values())) == sum(sizes.values())


def test_the_warm_up_leaves_a_shard_larger_than_half_the_available_memory_alone_and_ends_on_stop(tmp_path):
    shard = tmp_path / "shard"
    shard.mkdir()
    for name in ("a", "b"):
        (shard / name).write_bytes(os.urandom(10_000))
    assert warm_page_cache(str(shard), available=lambda: 2 * 20_000 - 2) == 0  # it would only evict other pages
    asked = []
    assert warm_page_cache(str(shard), chunk=4096, stop=lambda: asked.append(1) or len(asked) > 2,
                           available=lambda: None) == 2 * 4096  # two chunks, then the stop


def test_the_step_timer_gives_each_step_the_time_since_the_mark_before():
    now = iter([10.0, 10.0125, 10.5, 10.5])
    timer = StepTimer(clock=lambda: next(now))
    assert timer.mark("wait") == pytest.approx(0.0125)
    assert timer.mark("open") == pytest.approx(0.4875)
    timer.mark("nothing")
    assert timer.milliseconds == {"wait": 12.5, "open": 487.5, "nothing": 0.0}


def test_a_replaced_shard_is_retired_in_short_calls_each_after_giving_way():
    """Flush, each index dropped in a call of its own, close: a request waits for one of them,
    not their sum (the real shard's swap is in tests/integration/test_edge_build.py)."""
    calls = []

    class Shard:
        def flush(self):
            calls.append("flush")

        def update(self, operation):
            calls.append(operation)

        def close(self):
            calls.append("close")

    class UpdateOperation:
        @staticmethod
        def delete_field_index(field):
            return f"drop {field}"

    qe = type("qe", (), {"UpdateOperation": UpdateOperation})
    steps = StepTimer()
    retire_shard(Shard(), qe, ("content", "tags_lower"), lambda: calls.append("give way"), steps)
    assert calls == ["give way", "flush", "give way", "drop content", "give way", "drop tags_lower", "give way", "close"]
    assert list(steps.milliseconds) == ["flush_old", "drop_old_indexes", "close_old"]
