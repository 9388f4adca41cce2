"""The web's index maintainer: when a due Edge build waits (an import on its way, SIMILAR_TO after a small one)."""

import threading
import time
from contextlib import contextmanager
from types import SimpleNamespace

from api.index_maintainer import BuildHolds, IndexMaintainer


class _Pipeline:
    def __init__(self, sizes):
        self._sizes, self._asked = sizes, []

    def hlen(self, key):
        self._asked.append(key)

    def execute(self):
        return [self._sizes.get(key, 0) for key in self._asked]


class _Redis:
    """Held messages per queue, as Dramatiq's Redis broker keeps them (``mempipe:<queue>.msgs``)."""

    def __init__(self):
        self.sizes: dict[str, int] = {}

    def set(self, queue: str, held: int) -> None:
        self.sizes[f"mempipe:{queue}.msgs"] = held

    def hlen(self, key):
        return self.sizes.get(key, 0)

    def pipeline(self, transaction=True):
        return _Pipeline(self.sizes)


def _maintainer(holds: BuildHolds):
    clock = [100.0]
    vectors = SimpleNamespace(due=False, changes=1_000, codes_only=False)
    vectors.build_due = lambda: vectors.due
    vectors.due_build_is_codes_only = lambda: vectors.due and vectors.codes_only
    vectors.pending_changes = lambda: vectors.changes
    redis = _Redis()
    maintainer = IndexMaintainer(SimpleNamespace(vectors=vectors, broker_redis=redis), 1.0, holds, clock=lambda: clock[0])
    return maintainer, vectors, redis, clock


def test_a_due_build_waits_while_the_similarity_queue_holds_work_then_goes():
    maintainer, vectors, redis, clock = _maintainer(BuildHolds(import_max_changes=0, similarity_wait_s=120, similarity_wait_max_changes=20_000))
    assert not maintainer._hold()  # nothing due: nothing to hold
    vectors.due = True
    redis.set("similarity", 3)
    assert maintainer._hold()
    clock[0] += 119
    assert maintainer._hold()
    clock[0] += 2
    assert not maintainer._hold()  # the bound: builds anyway
    redis.set("similarity", 0)
    assert not maintainer._hold()  # queue empty: builds at once
    redis.set("similarity", 1)
    assert maintainer._hold()  # a new hold starts afresh


def test_zero_never_holds():
    maintainer, vectors, redis, _ = _maintainer(BuildHolds.off())
    vectors.due = True
    redis.set("similarity", 5)
    redis.set("embed", 5)
    assert not maintainer._hold()


def test_a_large_build_goes_first_the_catch_up_would_scan_every_unindexed_point():
    maintainer, vectors, redis, _ = _maintainer(BuildHolds(import_max_changes=0, similarity_wait_s=120, similarity_wait_max_changes=20_000))
    vectors.due = True
    redis.set("similarity", 200)
    vectors.changes = 20_000
    assert maintainer._hold()  # at the bound: still waits
    vectors.changes = 20_001
    assert not maintainer._hold()  # past it: build now, link against the index afterwards


def test_a_due_build_waits_for_an_import_on_its_way_up_to_a_bound_of_unindexed_points():
    maintainer, vectors, redis, clock = _maintainer(BuildHolds(import_max_changes=50_000, similarity_wait_s=120,
                                                               similarity_wait_max_changes=20_000))
    vectors.due, vectors.changes = True, 30_000
    redis.set("similarity", 40)  # deferred SIMILAR_TO work: the small-build hold would not apply at 30k
    for queue in ("persist", "embed", "vectors"):
        redis.sizes.clear()
        redis.set(queue, 2)
        assert maintainer._hold(), queue  # a slow import's pause between batches is not the end of it
    clock[0] += 10_000
    assert maintainer._hold()  # no time bound: only the unindexed points bound it
    vectors.changes = 50_001
    assert not maintainer._hold()  # recall would scan too much: build even mid-import
    vectors.changes = 30_000
    redis.sizes.clear()
    assert not maintainer._hold()  # the import is through: build


def test_a_codes_only_build_waits_for_the_whole_import_past_the_bound():
    """Under the plain size a search scans at most that many points; the swap would stop them all mid-import."""
    maintainer, vectors, redis, _ = _maintainer(BuildHolds(import_max_changes=50_000, similarity_wait_s=120,
                                                           similarity_wait_max_changes=20_000))
    vectors.due, vectors.changes, vectors.codes_only = True, 150_000, True
    redis.set("embed", 3)
    assert maintainer._hold()
    vectors.codes_only = False  # past the plain size the build gives the graph: it goes even mid-import
    assert not maintainer._hold()
    vectors.codes_only = True
    redis.sizes.clear()
    assert not maintainer._hold()  # the import is through: build
    off, vectors, redis, _ = _maintainer(BuildHolds(import_max_changes=0, similarity_wait_s=0, similarity_wait_max_changes=0))
    vectors.due, vectors.codes_only = True, True
    redis.set("embed", 3)
    assert not off._hold()  # 0 still turns the import hold off


@contextmanager
def _running_behind_an_import(vectors):
    """A started maintainer (ticking every 50 ms, building at most hourly) while an import is
    on its way, which holds a build that is only due."""
    redis = _Redis()
    redis.set("persist", 1)
    maintainer = IndexMaintainer(SimpleNamespace(vectors=vectors, broker_redis=redis), 3600.0,
                                 BuildHolds(import_max_changes=1_000, similarity_wait_s=0, similarity_wait_max_changes=0),
                                 flush_interval=0.05)
    maintainer.start()
    try:
        yield maintainer
    finally:
        maintainer.stop()
        maintainer.join(5)
    assert not maintainer.is_alive()


def test_the_maintainer_flushes_on_its_own_interval_even_while_a_build_is_held():
    flushed = threading.Event()
    vectors = SimpleNamespace(build_due=lambda: True, pending_changes=lambda: 10, maintain=lambda: None,
                              persist=lambda: flushed.set() or 5)
    with _running_behind_an_import(vectors):
        assert flushed.wait(5)


def test_a_build_in_a_child_is_finished_at_every_tick_whatever_the_holds_say():
    """Its copy is taken and writes are journaled: the swap follows the child's exit at the next
    tick (the flush interval), not the build interval, and an import on its way does not hold it."""
    maintained = threading.Event()
    vectors = SimpleNamespace(build_due=lambda: True, pending_changes=lambda: 10, build_in_flight=lambda: True,
                              maintain=maintained.set, persist=lambda: 0)
    with _running_behind_an_import(vectors):
        assert maintained.wait(5)


def test_the_router_calls_a_due_build_codes_only_when_no_open_store_would_build_a_graph():
    from pipeline.vectors.router import VectorRouter

    def store(due: bool, codes_only: bool):
        return SimpleNamespace(build_due=lambda: due, due_build_is_codes_only=lambda: due and codes_only)

    def router(*stores):
        return VectorRouter(SimpleNamespace(open_vector_stores=lambda: list(stores)))

    assert router(store(True, True), store(False, False)).due_build_is_codes_only()
    assert not router(store(True, True), store(True, False)).due_build_is_codes_only()  # one gives a graph
    assert not router(store(False, False)).due_build_is_codes_only()  # nothing due
    assert router(store(True, True), SimpleNamespace()).due_build_is_codes_only()  # a server store builds nothing


def test_a_started_maintainer_reads_the_shard_into_the_page_cache_once_before_anything_else():
    """The last stop's close dropped the shard's files from the page cache: read them back first,
    off the request path, and only once; a failure there is logged and the maintainer goes on."""
    calls: list[str] = []
    flushed = threading.Event()
    vectors = SimpleNamespace(build_due=lambda: False, pending_changes=lambda: 0, maintain=lambda: None,
                              warm_page_cache=lambda stop: calls.append("warm") or 1_000,
                              persist=lambda: calls.append("persist") or flushed.set() or 0)
    with _running_behind_an_import(vectors):
        assert flushed.wait(5)
    assert calls[0] == "warm" and calls.count("warm") == 1 and "persist" in calls

    def failing(stop):
        raise OSError("the disk")
    vectors.warm_page_cache = failing
    flushed.clear()
    with _running_behind_an_import(vectors):
        assert flushed.wait(5)  # it went on to its flushes


def test_the_maintainer_reads_the_shard_through_the_page_cache_again_on_its_interval():
    """A machine that reclaims untouched file pages would drop what searches did not walk
    lately; read again every page_cache_refresh_s, the kernel sees the shard in use. A
    failed read is logged and the next one tried."""
    reads: list[float] = []
    enough = threading.Event()

    def warm(stop):
        reads.append(time.monotonic())
        if len(reads) == 2:
            raise OSError("the disk")
        if len(reads) >= 4:
            enough.set()
        return 1_000

    vectors = SimpleNamespace(build_due=lambda: False, pending_changes=lambda: 0, maintain=lambda: None,
                              warm_page_cache=warm, persist=lambda: 0)
    maintainer = IndexMaintainer(SimpleNamespace(vectors=vectors, broker_redis=_Redis()), 3600.0,
                                 flush_interval=3600.0, page_cache_refresh_s=0.05)
    maintainer.start()
    try:
        assert enough.wait(5)  # the start's read, then one every 50 ms, past the failed one
    finally:
        maintainer.stop()
        maintainer.join(5)
    assert all(later - earlier >= 0.04 for earlier, later in zip(reads, reads[1:]))


def test_the_router_reads_every_open_edge_store_into_the_page_cache_and_skips_a_server_store():
    from pipeline.vectors.router import VectorRouter

    stores = [SimpleNamespace(warm_page_cache=lambda stop: 10), SimpleNamespace(), SimpleNamespace(warm_page_cache=lambda stop: 5)]
    assert VectorRouter(SimpleNamespace(open_vector_stores=lambda: stores)).warm_page_cache() == 15
