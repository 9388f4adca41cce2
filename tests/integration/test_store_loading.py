"""A starting redis-server that is still loading is waited for, and its AOF is compacted.

The slow load is made, not hoped for: redis' ``key-load-delay`` (a debugging setting, in
microseconds per key read from a snapshot) makes the load last at least keys x delay, well
past the answer timeout the server is started with, whatever this machine's speed.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ops.aof import compact_now, incremental_bytes
from ops.redis_servers import RedisServer, free_port
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
