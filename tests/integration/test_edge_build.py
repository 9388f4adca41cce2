"""The Edge index built by a child process on a copy of the shard, then swapped in (issue 21).

The real ``qdrant_edge``, in-process (no server). A shard of 7,000 384-d points is past Qdrant's
indexing threshold, so ``optimize()`` builds an HNSW index; ``plain_max_points`` and
``optimize_min_changes`` are lowered so that the build is due at that size.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import threading
import time

import numpy as np
import pytest

from ops.bench.stack import wait_until
from pipeline.graph import Scope, TagFilter
from ops.bench.suite.procs import alive
from pipeline.vectors import INDEX_BUILD_FINISHED, EdgeVectorStore, VectorPoint, VectorQuery, vector_payload
from pipeline.vectors import edge_swap, shard_generations, shard_lock
from pipeline.vectors.edge import saved_changes, saved_codes_only
from pipeline.vectors.edge_swap import BUILD, DISCARD, OLD, ChildBuildOptions, sibling
from tests import edge_segments

pytestmark = pytest.mark.integration

DIMS, COUNT = 384, 7000
# Bounds on waits: far above what a 7,000-point build takes on a loaded 2-core machine (seconds).
BUILD_WAIT_S = 300
VECTORS = np.random.default_rng(21).standard_normal((COUNT + 2000, DIMS)).astype("float32")


def memory(i: int, importance: float = 0.5) -> VectorPoint:
    payload = vector_payload({"id": f"m{i}", "content": f"memory {i}", "tags": [f"chat:{i % 20}"], "type": "Context",
                              "importance": importance, "timestamp": "2025-01-01T00:00:00+00:00"})
    return VectorPoint(f"m{i}", VECTORS[i].tolist(), payload)


def nearest(store: EdgeVectorStore, i: int) -> list[str]:
    return [h.memory_id for h in store.search(VectorQuery(VECTORS[i].tolist(), 1))]


def filled_store(path: str, options: ChildBuildOptions | None = None) -> EdgeVectorStore:
    store = EdgeVectorStore(path, DIMS, optimize_min_changes=1, plain_max_points=100,
                            child_build=options or ChildBuildOptions(nice=5, retry_s=0.5))
    store.ensure_collection()
    for start in range(0, COUNT, 1000):
        store.upsert([memory(i) for i in range(start, start + 1000)])
    return store


def siblings(path: str) -> list[str]:
    """What lies beside the shard's link and its live generation."""
    live = os.path.basename(shard_generations.live_dir(path))
    return sorted(set(os.listdir(os.path.dirname(path))) - {os.path.basename(path), live, os.path.basename(path) + ".lock"})


class Heartbeat(threading.Thread):
    """A thread that wakes every 10 ms: its longest gap is the longest the GIL was held from it."""

    def __init__(self):
        super().__init__(daemon=True)
        self.gaps: list[float] = []
        self._halt = threading.Event()

    def run(self):
        last = time.perf_counter()
        while not self._halt.wait(0.01):
            now = time.perf_counter()
            self.gaps.append(now - last - 0.01)
            last = now

    def finish(self) -> float:
        self._halt.set()
        self.join(5)
        return max(self.gaps, default=0.0)


@pytest.mark.parametrize("paused_max", [edge_swap.CATCH_UP_PAUSED_MAX, 2], ids=["in-the-pause", "caught-up-before"])
def test_a_build_in_a_child_keeps_the_process_answering_and_every_write_made_meanwhile(tmp_path, monkeypatch, paused_max,
                                                                                      caplog):
    """The journaled writes are copied into the built shard with writes paused, or (many of
    them) mostly before, in rounds of small steps, while the process goes on."""
    monkeypatch.setattr(edge_swap, "CATCH_UP_PAUSED_MAX", paused_max)
    monkeypatch.setattr(edge_swap, "CATCH_UP_CHUNK", 16)
    path = str(tmp_path / "shard")
    store = filled_store(path)
    assert store.build_due() and store.indexed_points() == 0
    store.maintain()
    assert store.build_in_flight() and os.path.isdir(sibling(path, BUILD))
    # Until the swap the live shard is as unindexed as before: SIMILAR_TO waits for the build.
    assert store.build_pending() == COUNT
    child = store._build

    heartbeat = Heartbeat()
    heartbeat.start()
    searches, written, deleted, repayloaded = 0, [], [], []
    started = time.monotonic()
    while child.poll() is None and time.monotonic() - started < BUILD_WAIT_S:
        # the web's work goes on: searches answer, writes, deletes and payload changes land
        probe = (searches * 7 + 3) % COUNT  # never deleted below
        assert nearest(store, probe) == [f"m{probe}"]
        searches += 1
        new = COUNT + len(written)
        store.upsert([memory(new)])
        written.append(new)
        store.delete([f"m{len(deleted) * 7 + 1}"])
        deleted.append(len(deleted) * 7 + 1)
        store.set_payloads({f"m{len(repayloaded) * 7 + 2}": {"importance": 0.9}})
        repayloaded.append(len(repayloaded) * 7 + 2)
        time.sleep(0.05)
    build_s = time.monotonic() - started
    longest_gap = heartbeat.finish()
    assert child.poll() == 0
    # The build held the child's GIL, not this one: had it been held here, the heartbeat's
    # longest gap would be the build's whole length.
    assert longest_gap < build_s / 3, (longest_gap, build_s)
    assert searches >= 5

    caplog.set_level(logging.INFO, logger="pipeline.vectors.edge")
    retired = shard_generations.live_dir(path)
    store.maintain()  # the swap
    assert not store.build_in_flight() and store.indexed_points() > 0
    # the built copy is the next generation, the link points at it, the old one is gone
    assert shard_generations.live_dir(path) == shard_generations.generation_dir(path, 1)
    assert not os.path.exists(retired) and os.path.islink(path)
    # The log says where the swap went, step by step; searches waited only for its switch.
    finished = next(r for r in caplog.records if r.getMessage() == INDEX_BUILD_FINISHED)
    steps = finished.swap_steps_ms
    assert list(steps) == ["warm_page_cache", "open_built", "catch_up", "writes_paused", "searches_paused",
                           "flush_old", "drop_old_indexes", "close_old"]
    assert all(ms >= 0 for ms in steps.values())
    assert abs(steps["searches_paused"] - finished.swap_pause_seconds * 1000) <= 1  # rounded differently
    assert finished.caught_up == len(written) + len(deleted) + len(repayloaded)
    # the record a restart reads says so at once, not at the next flush
    assert saved_changes(path) == len(written) + len(deleted) + len(repayloaded)
    assert siblings(path) == []
    assert shard_lock._lock_path(path) in shard_lock._held  # the owner still holds its lock
    expected = COUNT + len(written) - len(deleted)

    def check(s: EdgeVectorStore):
        assert s.count() == expected
        assert nearest(s, written[-1]) == [f"m{written[-1]}"] and nearest(s, 3) == ["m3"]
        # the live shard's payload indexes answer filters (the replaced one's were dropped before its close)
        scoped = VectorQuery(VECTORS[3].tolist(), 1, Scope(TagFilter(("chat:3",), "any", "exact")))
        assert [h.memory_id for h in s.search(scoped)] == ["m3"]
        assert s.retrieve([f"m{i}" for i in deleted]) == {}
        stored = s.retrieve([f"m{i}" for i in repayloaded])
        assert {r.payload["importance"] for r in stored.values()} == {0.9}
        assert stored[f"m{repayloaded[0]}"].payload["content"] == f"memory {repayloaded[0]}"  # merged, not replaced

    check(store)
    # the writes since the copy, payload changes too (each moved its point out of the index)
    assert store.pending_changes() == len(written) + len(deleted) + len(repayloaded)
    store.upsert([memory(COUNT + 1999)])  # the new shard takes writes
    expected += 1
    store.close()
    reopened = EdgeVectorStore(path, DIMS)
    reopened.ensure_collection()
    check(reopened)
    assert reopened.indexed_points() > 0
    reopened.close()


def test_a_failed_build_leaves_the_live_shard_and_is_tried_again_later(tmp_path):
    path = str(tmp_path / "shard")
    store = filled_store(path, ChildBuildOptions(retry_s=3600, python="/bin/false"))  # a child that exits 1
    store.maintain()
    wait_until(lambda: store._build.poll() is not None, BUILD_WAIT_S, 0.05, "the build child to exit")
    store.upsert([memory(COUNT)])
    store.maintain()
    assert not store.build_in_flight() and siblings(path) == []
    assert store.count() == COUNT + 1 and nearest(store, COUNT) == [f"m{COUNT}"] and store.indexed_points() == 0
    assert store.pending_changes() == COUNT + 1  # the failed build's changes wait for the next one
    store.maintain()
    assert not store.build_in_flight()  # not again before the retry time

    store._child_build = ChildBuildOptions(nice=5, retry_s=0.2)
    store._build_retry_at = 0.0
    store.maintain()
    assert store.build_in_flight()
    os.kill(store._build.pid, signal.SIGKILL)  # a child killed mid-build
    wait_until(lambda: store._build.poll() is not None, BUILD_WAIT_S, 0.05, "the build child to exit")
    store.maintain()
    assert not store.build_in_flight() and siblings(path) == [] and store.count() == COUNT + 1
    store.maintain()
    assert not store.build_in_flight()
    time.sleep(0.3)  # past the retry time: built this time
    store.maintain()
    assert store.build_in_flight()
    wait_until(lambda: store._build.poll() is not None, BUILD_WAIT_S, 0.05, "the build child to exit")
    store.maintain()
    assert not store.build_in_flight() and store.indexed_points() > 0 and store.count() == COUNT + 1
    store.close()


@pytest.mark.parametrize("failing", ["copy_points", "point_to"])
def test_a_swap_that_fails_leaves_the_old_shard_live_and_nothing_beside_it(tmp_path, monkeypatch, failing):
    path = str(tmp_path / "shard")
    store = filled_store(path)
    store.maintain()
    store.upsert([memory(COUNT)])
    wait_until(lambda: store._build.poll() is not None, BUILD_WAIT_S, 0.05, "the build child to exit")
    live = shard_generations.live_dir(path)

    def fail(*args, **kwargs):
        raise OSError("disk gone")

    monkeypatch.setattr(edge_swap if failing == "copy_points" else shard_generations, failing, fail)
    with pytest.raises(OSError):
        store.maintain()
    monkeypatch.undo()
    assert not store.build_in_flight() and siblings(path) == [] and shard_generations.live_dir(path) == live
    assert store.count() == COUNT + 1 and nearest(store, COUNT) == [f"m{COUNT}"] and store.indexed_points() == 0
    store.upsert([memory(COUNT + 1)])
    assert nearest(store, COUNT + 1) == [f"m{COUNT + 1}"]
    store.close()


def _small_shard(path: str) -> None:
    store = EdgeVectorStore(path, 8)
    store.ensure_collection()
    store.upsert([VectorPoint(f"m{i}", [float(i == j) for j in range(8)], vector_payload(
        {"id": f"m{i}", "content": "c", "tags": [], "type": "Context", "importance": 0.5})) for i in range(8)])
    store.close()


def _count(path: str) -> int:
    store = EdgeVectorStore(path, 8)
    store.ensure_collection()
    try:
        return store.count()
    finally:
        store.close()


def test_a_start_after_an_interrupted_swap_or_build_opens_the_complete_shard(tmp_path):
    path = str(tmp_path / "shard")
    _small_shard(path)
    zero = shard_generations.live_dir(path)
    assert zero == shard_generations.generation_dir(path, 0)

    # killed before the link moved: a built generation, opened and half caught up, beside the live one
    half = shard_generations.generation_dir(path, 1)
    shutil.copytree(zero, half)
    shutil.copytree(zero, sibling(path, BUILD))
    assert _count(path) == 8 and siblings(path) == [] and shard_generations.live_dir(path) == zero

    # killed after the link moved: the new generation is live (it has every write), the old one left
    shutil.copytree(zero, half)
    shard_generations.point_to(path, half)
    store = EdgeVectorStore(path, 8)
    store.ensure_collection()
    store.delete(["m0"])
    store.close()
    os.makedirs(zero)  # the old generation's removal never finished
    assert _count(path) == 7 and siblings(path) == [] and shard_generations.live_dir(path) == half


def test_a_start_after_an_earlier_versions_interrupted_swap_restores_the_complete_shard(tmp_path):
    """Earlier versions swapped by renaming directories: ``<shard>`` a directory, ``.old`` beside it."""
    path, complete = str(tmp_path / "data" / "shard"), str(tmp_path / "elsewhere" / "shard")
    _small_shard(complete)
    legacy = shard_generations.live_dir(complete)

    # killed between that swap's two renames: the live dir gone, the old one beside it, a build left
    shutil.copytree(legacy, sibling(path, OLD))
    shutil.copytree(legacy, sibling(path, BUILD))
    assert _count(path) == 8 and siblings(path) == []
    assert shard_generations.live_dir(path) == shard_generations.generation_dir(path, 0)  # adopted

    # killed after both renames: a half-caught-up build in the live dir, the complete old beside it
    shard_generations.remove(path)
    shutil.copytree(legacy, path)
    store = EdgeVectorStore(path, 8)
    store.ensure_collection()
    store.delete(["m0", "m1"])
    store.close()
    os.unlink(path)  # the store adopted it; put the directory back where that version had it
    os.rename(shard_generations.generation_dir(path, 0), path)
    shutil.copytree(legacy, sibling(path, OLD))
    os.makedirs(sibling(path, DISCARD))
    assert _count(path) == 8 and siblings(path) == []


def test_a_stop_during_a_build_ends_the_child_and_keeps_the_live_shard(tmp_path):
    path = str(tmp_path / "shard")
    store = filled_store(path)
    store.maintain()
    child = store._build
    store.upsert([memory(COUNT)])
    store.close()
    assert child.poll() is not None and siblings(path) == []
    reopened = EdgeVectorStore(path, DIMS)
    reopened.ensure_collection()
    assert reopened.count() == COUNT + 1 and reopened.indexed_points() == 0
    reopened.close()


def test_the_index_maintainer_starts_the_child_build_and_swaps_it_in_on_its_own(tmp_path):
    from types import SimpleNamespace

    from api.index_maintainer import IndexMaintainer

    path = str(tmp_path / "shard")
    store = filled_store(path)
    maintainer = IndexMaintainer(SimpleNamespace(vectors=store), interval=0.05)  # no holds: nothing else to consult
    maintainer.start()
    try:
        wait_until(store.build_in_flight, BUILD_WAIT_S, 0.05, "a build in flight")
        wait_until(lambda: store.indexed_points() > 0, BUILD_WAIT_S, 0.05, "indexed points")
    finally:
        maintainer.stop()
        maintainer.join(10)
    assert not store.build_in_flight() and siblings(path) == [] and store.count() == COUNT
    store.close()


def test_the_built_copy_is_read_into_the_page_cache_before_it_opens_while_searches_go_on(tmp_path, monkeypatch):
    """Edge drops a closed shard's files from the page cache, the child's copy included: the
    swap reads them back before opening it, holding no lock, so neither the open nor the new
    shard's first search faults its codes in from disk, holding the GIL."""
    path = str(tmp_path / "shard")
    store = filled_store(path)
    warmed: list[tuple[str, bool, int]] = []
    read = edge_swap.warm_page_cache

    def warm_and_search(build_path: str, **kwargs) -> int:
        searched = threading.Thread(target=lambda: nearest(store, 5), daemon=True)
        searched.start()
        searched.join(BUILD_WAIT_S)  # a search from another thread answers meanwhile: no lock held
        warmed.append((build_path, searched.is_alive(), read(build_path, **kwargs)))
        return warmed[-1][2]

    monkeypatch.setattr(edge_swap, "warm_page_cache", warm_and_search)
    store.maintain()
    wait_until(lambda: store._build.poll() is not None, BUILD_WAIT_S, 0.05, "the child's build")
    store.maintain()  # the swap
    assert [(p, alive) for p, alive, _ in warmed] == [(shard_generations.generation_dir(path, 1), False)]
    assert warmed[0][2] > COUNT * DIMS  # the copy's files, its codes and vectors among them
    assert not store.build_in_flight() and store.indexed_points() > 0 and nearest(store, 5) == ["m5"]
    # and at a start (the index maintainer's first step): the live shard, the same files
    monkeypatch.undo()
    assert store.warm_page_cache() > COUNT * DIMS
    assert store.warm_page_cache(stop=lambda: True) == 0
    store.close()


_OWNER = """
import sys, time
sys.path.insert(0, {root!r})
from tests.integration.test_edge_build import filled_store
store = filled_store({path!r})
store.maintain()
print(store._build.pid, flush=True)
time.sleep(600)
"""


def test_a_killed_owner_leaves_no_child_building_and_its_next_start_removes_the_copy(tmp_path):
    import subprocess
    import sys

    path = str(tmp_path / "shard")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    owner = subprocess.Popen([sys.executable, "-c", _OWNER.format(root=root, path=path)], cwd=root,
                             stdout=subprocess.PIPE, text=True)
    try:
        child = int(owner.stdout.readline())
        assert os.path.isdir(sibling(path, BUILD))
    finally:
        owner.kill()
        owner.wait(30)
        owner.stdout.close()

    # gone or a zombie until reaped: it has ended
    wait_until(lambda: not alive(child), 10, 0.05, "the build child to die with its parent")  # PR_SET_PDEATHSIG
    reopened = EdgeVectorStore(path, DIMS)
    reopened.ensure_collection()
    assert reopened.count() == COUNT and siblings(path) == []
    reopened.close()


def test_points_updated_after_a_build_count_as_unindexed_when_searches_are_batched(tmp_path, monkeypatch):
    """Qdrant's ``indexed_vectors_count`` goes on counting a point an update moved out of its
    indexed segment: a SIMILAR_TO batch sized by it alone scanned 160k such points 64 queries
    a call after a 1M build."""
    from pipeline.vectors import edge

    monkeypatch.setattr(edge, "SEARCH_BATCH_SCAN_POINTS", 10_000)
    monkeypatch.setattr(edge, "SEARCH_GRAPH_SCAN_POINTS", 0)
    store = EdgeVectorStore(str(tmp_path / "shard"), DIMS, optimize_min_changes=1)
    store.ensure_collection()
    for start in range(0, COUNT, 1000):
        store.upsert([memory(i) for i in range(start, start + 1000)])
    assert store._search_batch_size() == 10_000 // COUNT  # all scanned, and no graph to walk
    store.maintain()  # built here: no child configured
    assert store.indexed_points() == COUNT and store._search_batch_size() == edge.SEARCH_BATCH_MAX
    store.set_payloads({f"m{i}": {"importance": 0.9} for i in range(2000)})
    assert store.indexed_points() == COUNT  # the moved points still counted as indexed
    assert store._search_batch_size() == 10_000 // 2000
    # A walk of the graph counts as points scanned, so a built shard's batch is cut too.
    monkeypatch.setattr(edge, "SEARCH_GRAPH_SCAN_POINTS", 500)
    assert store._search_batch_size() == 10_000 // (2000 + 500)
    store.close()


def test_changes_a_child_is_building_count_as_unindexed_until_its_swap(tmp_path, monkeypatch):
    """A child's build takes the changes since the last one; the live shard scans them until the swap."""
    from pipeline.vectors import edge

    monkeypatch.setattr(edge, "SEARCH_BATCH_SCAN_POINTS", 10_000)
    monkeypatch.setattr(edge, "SEARCH_GRAPH_SCAN_POINTS", 0)
    store = filled_store(str(tmp_path / "shard"))
    store.maintain()
    wait_until(lambda: store._build.poll() is not None, BUILD_WAIT_S, 0.05, "the build child to exit")
    store.maintain()  # the swap
    assert store.indexed_points() == COUNT and store._search_batch_size() == edge.SEARCH_BATCH_MAX
    store.set_payloads({f"m{i}": {"importance": 0.9} for i in range(2000)})
    store.maintain()  # a second build, of those changes
    assert store.build_in_flight() and store.build_pending() == 2000
    assert store._search_batch_size() == 10_000 // 2000
    store.close()


def built_segments(path: str) -> list[tuple[int, bool]]:
    """Each built segment's HNSW ``m`` (0: codes only, no graph) and whether it holds int8 codes."""
    return [(vectors["index"]["options"]["m"], edge_segments.has_codes(directory))
            for directory, vectors in edge_segments.built(path)]


def test_below_the_plain_size_a_codes_only_build_then_the_graph_past_it(tmp_path):
    """Under EDGE_PLAIN_MAX_POINTS a build writes int8 codes and no HNSW graph (``m=0``), in a
    child, once ``codes_build_min_changes`` points changed; searches then rescore on float32.
    Past the plain size the next build gives those segments their graph, however few changed."""
    from pipeline.vectors import edge

    path = str(tmp_path / "shard")
    store = EdgeVectorStore(path, DIMS, optimize_min_changes=1, plain_max_points=COUNT + 500,
                            child_build=ChildBuildOptions(nice=5, retry_s=0.5), codes_build_min_changes=COUNT)
    store.ensure_collection()
    store.upsert([memory(i) for i in range(COUNT - 1)])
    assert store.stays_plain() and not store.build_due() and store.build_pending() == 0  # one change short
    assert not store.due_build_is_codes_only()
    store.upsert([memory(COUNT - 1)])
    assert store.build_due() and store.build_pending() == COUNT and store.due_build_is_codes_only()
    store.maintain()
    assert store.build_in_flight() and not store._build.layout.graph
    store.finish_build()
    assert built_segments(path) == [(0, True)]  # codes, no graph
    # the child built with the shard's own index parameters: payload indexes memory-mapped
    assert all(all(edge_segments.payload_indexes_on_disk(d).values()) for d, _ in edge_segments.built(path))
    assert store.indexed_points() == COUNT and saved_codes_only(path)
    assert not store.build_due() and store.build_pending() == 0
    # no graph to walk, so no walk's cost in a batch's size (the codes count as indexed)
    assert edge.SEARCH_BATCH_SCAN_POINTS // edge.SEARCH_GRAPH_SCAN_POINTS < edge.SEARCH_BATCH_MAX
    assert store._search_batch_size() == edge.SEARCH_BATCH_MAX
    for i in (3, 4321):
        hit = store.search(VectorQuery(VECTORS[i].tolist(), 1))[0]
        assert hit.memory_id == f"m{i}" and hit.score == pytest.approx(1.0, abs=1e-5)  # rescored on float32

    store.upsert([memory(COUNT + i) for i in range(600)])  # past the plain size: few changes, yet due
    assert not store.stays_plain() and store.build_due() and not store.due_build_is_codes_only()
    store.maintain()
    assert store._build.layout.graph
    store.finish_build()
    assert built_segments(path) and all(m > 0 and codes for m, codes in built_segments(path))
    assert not saved_codes_only(path) and not store.build_due()
    assert nearest(store, COUNT + 599) == [f"m{COUNT + 599}"]
    store.close()


def test_no_codes_only_build_without_codes_or_a_child(tmp_path):
    """The codes-only build needs the codes (EDGE_VECTOR_CODES=int8) and a child to run it:
    a build in the web would hold its GIL (seconds at 100k points)."""
    for codes, child in (("none", ChildBuildOptions()), ("int8", None)):
        store = EdgeVectorStore(str(tmp_path / f"{codes}-{child is not None}"), DIMS, optimize_min_changes=1,
                                plain_max_points=1000, child_build=child, vector_codes=codes, codes_build_min_changes=10)
        store.ensure_collection()
        store.upsert([memory(i) for i in range(20)])
        assert store.stays_plain() and not store.build_due() and store.build_pending() == 0
        store.close()


def test_a_close_during_the_swaps_page_cache_read_ends_the_read_and_the_swap_completes(tmp_path, monkeypatch):
    """A stop must not wait for a large shard to be read: close() tells the read to end, and the
    swap it was part of goes on to its pause, so the stop finds a complete shard either way."""
    path = str(tmp_path / "shard")
    store = filled_store(path)
    read = edge_swap.warm_page_cache
    seen: list[bool] = []

    def closed_meanwhile(build_path: str, stop=lambda: False, **kwargs) -> int:
        closer = threading.Thread(target=store.close)  # waits for the swap (the optimize lock)
        closer.start()
        wait_until(store._closing.is_set, BUILD_WAIT_S, 0.01, "the close to begin")
        seen.append(stop())
        return read(build_path, stop=stop, **kwargs)

    monkeypatch.setattr(edge_swap, "warm_page_cache", closed_meanwhile)
    store.maintain()
    wait_until(lambda: store._build.poll() is not None, BUILD_WAIT_S, 0.05, "the child's build")
    store.maintain()  # the swap, during which the close arrives
    assert seen == [True]
    wait_until(lambda: store._shard is None, BUILD_WAIT_S, 0.05, "the close")
    monkeypatch.undo()
    store.ensure_collection()  # the same store opened again: complete, and it reads again
    assert store.count() == COUNT and store.indexed_points() > 0 and siblings(path) == []
    assert store.warm_page_cache() > 0
    store.close()
