"""The web's index maintainer: a due Edge build waits (bounded) while SIMILAR_TO work is queued."""

from types import SimpleNamespace

from api.app import _IndexMaintainer


class _Redis:
    def __init__(self):
        self.similarity = 0

    def hlen(self, key):
        assert key == "mempipe:similarity.msgs"
        return self.similarity


def _maintainer(wait_s: float, max_changes: int = 20_000):
    vectors = SimpleNamespace(due=False, changes=1_000)
    vectors.build_due = lambda: vectors.due
    vectors.pending_changes = lambda: vectors.changes
    redis = _Redis()
    services = SimpleNamespace(vectors=vectors, broker_redis=redis)
    return _IndexMaintainer(services, 1.0, wait_s, max_changes), vectors, redis


def test_a_due_build_waits_while_the_similarity_queue_holds_work_then_goes(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr("api.app.time.monotonic", lambda: clock[0])
    maintainer, vectors, redis = _maintainer(120)
    assert not maintainer._hold()  # nothing due: nothing to hold
    vectors.due, redis.similarity = True, 3
    assert maintainer._hold()
    clock[0] += 119
    assert maintainer._hold()
    clock[0] += 2
    assert not maintainer._hold()  # the bound: builds anyway
    redis.similarity = 0
    assert not maintainer._hold()  # queue empty: builds at once
    redis.similarity = 1
    assert maintainer._hold()  # a new hold starts afresh


def test_zero_never_holds():
    maintainer, vectors, redis = _maintainer(0)
    vectors.due, redis.similarity = True, 5
    assert not maintainer._hold()


def test_a_large_build_goes_first_the_catch_up_would_scan_every_unindexed_point():
    maintainer, vectors, redis = _maintainer(120, max_changes=20_000)
    vectors.due, redis.similarity = True, 200
    vectors.changes = 20_000
    assert maintainer._hold()  # at the bound: still waits
    vectors.changes = 20_001
    assert not maintainer._hold()  # past it: build now, link against the index afterwards
