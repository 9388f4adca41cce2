"""SIMILAR_TO linking yields to the write path while the backlog is past its bound."""

from types import SimpleNamespace

from pipeline.actors.similarity import _large_index_build_due
from pipeline.background import yield_to_writes


def test_waits_while_the_backlog_is_high_then_runs():
    backlog = iter([5000, 3000, 1200, 10])
    slept: list[float] = []
    waited = yield_to_writes(lambda: next(backlog), 1000, 60, sleep=slept.append)
    assert waited == 0.75 and len(slept) == 3


def test_bounded_wait_and_off_switch():
    slept: list[float] = []
    assert yield_to_writes(lambda: 10**6, 1000, 1.0, sleep=slept.append) == 1.0  # runs anyway after the bound
    assert yield_to_writes(lambda: 10**6, 0, 60, sleep=slept.append) == 0.0  # 0: never waits
    assert yield_to_writes(lambda: 999, 1000, 60, sleep=slept.append) == 0.0


def test_waits_while_writes_keep_arriving_even_with_a_small_backlog():
    arriving = iter([True, True, False])
    slept: list[float] = []
    waited = yield_to_writes(lambda: 3, 1000, 60, sleep=slept.append, arriving=lambda: next(arriving))
    assert waited == 0.5 and len(slept) == 2


def test_a_stuck_backlog_below_the_bound_holds_nothing_once_writes_stop():
    # Dead-lettered writes stay "in flight"; without arrivals they must not delay linking.
    slept: list[float] = []
    assert yield_to_writes(lambda: 7, 1000, 60, sleep=slept.append, arriving=lambda: False) == 0.0
    assert yield_to_writes(lambda: 7, 0, 0.5, sleep=slept.append, arriving=lambda: True) == 0.5  # still bounded


class _FakePipeline:
    def __init__(self, sizes):
        self._sizes, self.asked = sizes, []

    def hlen(self, key):
        self.asked.append(key)

    def execute(self):
        return [self._sizes.get(key, 0) for key in self.asked]


class _FakeRedis:
    def __init__(self, sizes):
        self.sizes = sizes

    def pipeline(self, transaction=True):
        return _FakePipeline(self.sizes)


def test_write_path_busy_reads_the_write_path_queues_in_one_round_trip():
    from pipeline.broker import write_path_busy

    assert not write_path_busy(_FakeRedis({}))
    assert not write_path_busy(_FakeRedis({"mempipe:similarity.msgs": 5, "mempipe:enrich.msgs": 9}))
    for queue in ("persist", "embed", "vectors"):
        assert write_path_busy(_FakeRedis({f"mempipe:{queue}.msgs": 1}))


def test_linking_waits_for_a_large_index_build_only():
    vectors = SimpleNamespace(pending=0)
    vectors.build_pending = lambda: vectors.pending
    svc = SimpleNamespace(vectors=vectors, settings=SimpleNamespace(edge_optimize_similarity_wait_max_changes=20_000))
    due = _large_index_build_due(svc)
    assert not due()
    vectors.pending = 20_000
    assert not due()  # a build this small waits for the catch-up instead (api.index_maintainer)
    vectors.pending = 98_000
    assert due()
    server = SimpleNamespace(vectors=SimpleNamespace(), settings=svc.settings)  # a Qdrant server indexes as it goes
    assert not _large_index_build_due(server)()


def test_enrichment_waits_for_the_write_path_as_similar_to_does(monkeypatch):
    """An enrich message runs once writes stop arriving, not while they do."""
    from types import SimpleNamespace

    import pipeline.actors.enrich as enrich
    import pipeline.stages as stages
    import pipeline.background as background
    from pipeline.config import Settings

    arrivals = iter([True, True, False])
    order = []
    tracker = SimpleNamespace(inflight_count=lambda: 0, writes_arriving=lambda: next(arrivals))
    svc = SimpleNamespace(settings=Settings(), tracker=tracker, broker_redis=None, chat=None)
    monkeypatch.setattr(background, "write_path_busy", lambda client: False)
    monkeypatch.setattr(background, "pause", lambda s: order.append("waited"))
    monkeypatch.setattr(stages, "services", lambda: svc)
    monkeypatch.setattr(enrich, "build_enricher", lambda s: SimpleNamespace(run=lambda ids: order.append(("ran", ids))))
    enrich.enrich_memories.fn(["m1"])
    assert order == ["waited", "waited", ("ran", ["m1"])]
