"""ops.aof: what counts as the log to replay, and when the launcher asks for a rewrite."""

from __future__ import annotations

from pathlib import Path

import redis

from ops.aof import Compactor, compact_now, incremental_bytes


class FakeClient:
    def __init__(self, store: "FakeStore"):
        self.store = store

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def bgrewriteaof(self):
        if self.store.refuse:
            raise redis.ResponseError(self.store.refuse)
        self.store.rewrites += 1

    def info(self, section):
        return {"aof_rewrite_in_progress": int(self.store.busy_checks > 0), "aof_rewrite_scheduled": 0}


class FakeStore:
    def __init__(self, name: str, data_dir: Path, incr: int, refuse: str = ""):
        self.name, self.data_dir, self.refuse = name, data_dir, refuse
        self.rewrites, self.busy_checks = 0, 0
        (data_dir / "appendonlydir").mkdir(parents=True)
        # a snapshot much larger than any log below: only the interval and quiet rules apply
        (data_dir / "appendonlydir" / "appendonly.aof.1.base.rdb").write_bytes(b"b" * 100_000)
        self.log(incr)

    def log(self, size: int) -> None:
        (self.data_dir / "appendonlydir" / "appendonly.aof.1.incr.aof").write_bytes(b"x" * size)

    def client(self, timeout: float = 1.0):
        if self.busy_checks:
            self.busy_checks -= 1
        return FakeClient(self)


def test_only_the_incremental_logs_count(tmp_path: Path):
    aof = tmp_path / "appendonlydir"
    aof.mkdir()
    (aof / "appendonly.aof.3.base.rdb").write_bytes(b"b" * 5000)  # the snapshot: fast to load
    (aof / "appendonly.aof.3.incr.aof").write_bytes(b"i" * 300)
    (aof / "appendonly.aof.4.incr.aof").write_bytes(b"i" * 200)
    (aof / "appendonly.aof.manifest").write_bytes(b"m" * 100)
    assert incremental_bytes(tmp_path) == 500
    assert incremental_bytes(tmp_path / "missing") == 0


def test_a_store_is_rewritten_once_its_log_passes_the_limit_and_not_again_too_soon(tmp_path: Path):
    now = [0.0]
    graph = FakeStore("graph", tmp_path / "graph", incr=999)
    broker = FakeStore("broker", tmp_path / "broker", incr=10)
    compactor = Compactor([graph, broker], max_incr_bytes=1000, min_interval_s=60, clock=lambda: now[0],
                          check_every_s=5, log=lambda line: None)
    assert compactor.tick() == []
    graph.log(1000)
    now[0] = 2.0
    assert compactor.tick() == []  # not checked again before check_every_s
    now[0] = 5.0
    assert compactor.tick() == ["graph"] and graph.rewrites == 1
    graph.log(3000)
    now[0] = 30.0
    assert compactor.tick() == []  # long again, still growing, within the interval
    graph.log(4000)
    now[0] = 66.0
    assert compactor.tick() == ["graph"] and graph.rewrites == 2
    assert broker.rewrites == 0


def test_once_the_log_stops_growing_the_rewrite_does_not_wait_for_the_interval(tmp_path: Path):
    now = [0.0]
    graph = FakeStore("graph", tmp_path / "graph", incr=2000)
    compactor = Compactor([graph], max_incr_bytes=1000, min_interval_s=60, clock=lambda: now[0], log=lambda line: None)
    assert compactor.tick() == ["graph"]
    graph.log(5000)  # the import goes on
    now[0] = 5.0
    assert compactor.tick() == []
    now[0] = 10.0  # ...and is over: the log did not grow since the last check
    assert compactor.tick() == ["graph"]
    graph.log(0)  # rewritten: nothing left to do however quiet it stays
    now[0] = 15.0
    assert compactor.tick() == []


def test_the_first_tick_compacts_what_the_last_run_left(tmp_path: Path):
    graph = FakeStore("graph", tmp_path / "graph", incr=5000)  # e.g. after a kill -9
    compactor = Compactor([graph], max_incr_bytes=1000, min_interval_s=60, clock=lambda: 100.0, log=lambda line: None)
    assert compactor.tick() == ["graph"]


def test_a_refused_rewrite_is_tried_again_at_the_next_check(tmp_path: Path):
    now = [0.0]
    graph = FakeStore("graph", tmp_path / "graph", incr=5000, refuse="ERR fork failed")
    compactor = Compactor([graph], max_incr_bytes=1000, min_interval_s=60, clock=lambda: now[0], log=lambda line: None)
    assert compactor.tick() == []
    graph.refuse = ""
    now[0] = 5.0
    assert compactor.tick() == ["graph"]


def test_a_stop_rewrites_every_store_with_a_log_and_waits_for_it(tmp_path: Path):
    graph = FakeStore("graph", tmp_path / "graph", incr=100_000)
    graph.busy_checks = 3  # the rewrite runs for a few looks
    broker = FakeStore("broker", tmp_path / "broker", incr=10)  # too little to bother
    assert compact_now([graph, broker], timeout=5) == []
    assert (graph.rewrites, broker.rewrites) == (1, 0)
    assert graph.busy_checks == 0


def test_a_stop_does_not_wait_past_its_timeout(tmp_path: Path):
    graph = FakeStore("graph", tmp_path / "graph", incr=100_000)
    graph.busy_checks = 10**6
    assert compact_now([graph], timeout=0.3) == ["graph"]


def test_a_log_grown_to_a_share_of_the_snapshot_is_rewritten_within_the_interval(tmp_path: Path):
    now = [0.0]
    graph = FakeStore("graph", tmp_path / "graph", incr=2000)
    (graph.data_dir / "appendonlydir" / "appendonly.aof.1.base.rdb").write_bytes(b"b" * 10_000)
    compactor = Compactor([graph], max_incr_bytes=1000, min_interval_s=60, max_log_to_base=0.5,
                          clock=lambda: now[0], log=lambda line: None)
    assert compactor.tick() == ["graph"]  # past the limit: the first rewrite
    graph.log(3000)  # the import goes on: within the interval, under half the snapshot
    now[0] = 5.0
    assert compactor.tick() == []
    graph.log(5001)  # a fast import: the log now replays longer than the snapshot loads
    now[0] = 10.0
    assert compactor.tick() == ["graph"] and graph.rewrites == 2
