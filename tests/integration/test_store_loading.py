"""A starting redis-server that is still loading is waited for, and its AOF is compacted.

The slow load is made, not hoped for: redis' ``key-load-delay`` (a debugging setting, in
microseconds per key read from a snapshot) makes the load last at least keys x delay, well
past the answer timeout the server is started with, whatever this machine's speed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from ops.aof import compact_now, incremental_bytes
from ops.redis_servers import RedisServer, free_port
from ops.serve import kill_group
from ops.bench.stack import wait_until

pytestmark = pytest.mark.integration

KEYS = 3000
DELAY_US = 1000  # 3000 keys x 1 ms: the load lasts at least 3 s
ANSWER_TIMEOUT = 0.5  # far below that: a launcher that waited for PING alone would give up


def _fill_and_compact(server: RedisServer) -> None:
    with server.client(timeout=10) as client:
        pipe = client.pipeline(transaction=False)
        for n in range(KEYS):
            pipe.set(f"key:{n}", "x" * 64)
        pipe.execute()
    assert incremental_bytes(server.data_dir) > 0
    # The keys move from the log into the snapshot base: the next start loads them from it.
    assert compact_now([server], timeout=30, min_bytes=1) == []
    wait_until(lambda: incremental_bytes(server.data_dir) < 1024, timeout=10, message="the log folded into the base")
    assert any(server.data_dir.glob("appendonlydir/*.base.rdb")), list(server.data_dir.rglob("*"))


def test_a_loading_server_is_waited_for_with_progress_and_keeps_its_data(tmp_path: Path):
    port = free_port()
    server = RedisServer("broker", port, tmp_path / "broker")
    server.start(10)
    try:
        _fill_and_compact(server)
    finally:
        server.stop()

    # ...and looks at its clients every KB, so that it answers LOADING along the way
    slow = RedisServer("broker", port, tmp_path / "broker",
                       extra_args=["--key-load-delay", str(DELAY_US), "--loading-process-events-interval-bytes", "1024"])
    lines: list[str] = []
    started = time.monotonic()
    slow.start(ANSWER_TIMEOUT, progress=lines.append)
    try:
        took = time.monotonic() - started
        assert took >= KEYS * DELAY_US / 1e6 * 0.9  # it really loaded that long...
        assert took > 4 * ANSWER_TIMEOUT  # ...far past the answer timeout, and was waited for
        assert lines and lines[-1].startswith("broker: loaded in"), lines
        assert any("loading its data" in line for line in lines[:-1]), lines  # progress on the way
        with slow.client() as client:
            assert client.dbsize() == KEYS
    finally:
        slow.stop()


def test_a_server_that_cannot_start_fails_at_once_with_its_log(tmp_path: Path):
    server = RedisServer("graph", free_port(), tmp_path / "graph", extra_args=["--no-such-setting", "1"])
    started = time.monotonic()
    with pytest.raises(RuntimeError) as failure:
        server.start(30)
    assert time.monotonic() - started < 30  # the exit is seen, not waited out
    assert "exited at start-up" in str(failure.value) and "redis.log" in str(failure.value)


def _heartbeats(port: int) -> int:
    with RedisServer("broker", port, Path(".")).client(timeout=2) as client:
        try:
            return client.zcard("mempipe:__heartbeats__")
        except redis.ConnectionError:  # LOADING included
            return 0


def test_a_worker_started_before_its_stores_waits_through_their_load_then_consumes(tmp_path: Path):
    broker_port, graph_port = free_port(), free_port()
    filled = RedisServer("broker", broker_port, tmp_path / "broker")
    filled.start(10)
    try:
        _fill_and_compact(filled)
    finally:
        filled.stop()
    env = {**os.environ, "REDIS_URL": f"redis://127.0.0.1:{broker_port}/0", "FALKORDB_PORT": str(graph_port),
           "EMBEDDING_PROVIDER": "hash", "MEMPIPE_DATA_DIR": str(tmp_path / "data"), "WORKER_METRICS_PORT": "0",
           "STORE_START_WAIT_S": "120"}
    log_path = tmp_path / "worker.log"
    with open(log_path, "wb") as log:  # no store runs yet
        worker = subprocess.Popen([sys.executable, "-m", "dramatiq", "pipeline.actors", "--processes", "1", "--threads", "1",
                                   "--queues", "maintenance"], env=env, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    worker_log = lambda: log_path.read_text(errors="replace")  # noqa: E731
    slow = RedisServer("broker", broker_port, tmp_path / "broker",
                       extra_args=["--key-load-delay", str(DELAY_US), "--loading-process-events-interval-bytes", "1024"])
    graph = RedisServer("graph", graph_port, tmp_path / "graph", with_falkordb=True)
    try:
        wait_until(lambda: "waiting for the broker" in worker_log(), timeout=120, message="the worker waiting for its broker")
        slow.spawn()
        graph.spawn()
        wait_until(lambda: "it is loading its data" in worker_log(), timeout=30, message="the worker seeing the load")
        # every worker thread and consumer is up once the broker has loaded: the consumer's heartbeat
        wait_until(lambda: _heartbeats(broker_port) > 0, timeout=120, message="the worker consuming after the load")
        assert worker.poll() is None
        text = worker_log()
        assert "the broker answers" in text
        assert '"level":"ERROR"' not in text and '"level":"CRITICAL"' not in text, text[-3000:]
        with slow.client() as client:
            assert client.dbsize() >= KEYS  # its data, loaded
    finally:
        kill_group(worker)
        slow.stop()
        graph.stop()
