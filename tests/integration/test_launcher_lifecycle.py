"""The launcher's lifecycle under load: a quiet start, Ctrl-C in the middle of an import with a
worker that will not stop, and a restart after ``kill -9`` of everything while work is written,
queued and half-processed. Every accepted memory is counted afterwards, once."""

from __future__ import annotations

import os
import random
import signal
import socket
import time
from pathlib import Path

import httpx
import pytest

from ops.aof import STOP_MIN_INCR_BYTES, incremental_bytes
from ops.bench.embedded import EmbeddedService
from ops.bench.suite.procs import alive, descendants, group_members
from ops.bench.stack import wait_until

pytestmark = pytest.mark.integration

# EMBEDDED_STOP_TIMEOUT_S for these stacks: every process that runs workers bounds its own stop by
# half of it (pipeline.stopping), so that the web and the worker stopping by themselves is what the
# code promises, not how fast a loaded machine happens to be.
STOP_TIMEOUT_S = 12.0
START_TIMEOUT_S = 180.0
SETTLE_TIMEOUT_S = 240.0  # hash embeddings: a few thousand memories settle in well under this


def _tree(service: EmbeddedService) -> tuple[list[int], set[int]]:
    """Every pid of the launcher's tree, and every process group they lead or belong to."""
    pids = [service.process.pid, *descendants(service.process.pid)]
    groups = set()
    for pid in pids:
        try:
            groups.add(os.getpgid(pid))
        except ProcessLookupError:
            pass
    return pids, groups - {os.getpgid(0)}  # never the test's own group


def _health(service: EmbeddedService) -> dict:
    return httpx.get(f"{service.url}/health", timeout=10).json()


def _import(service: EmbeddedService, count: int, tag: str) -> list[str]:
    ids = []
    with httpx.Client(base_url=service.url, headers=service.headers, timeout=60) as api:
        for start in range(0, count, 500):
            items = [{"content": f"lifecycle memory {n} of {tag}: item {n % 31} was reviewed", "tags": [tag]}
                     for n in range(start, min(start + 500, count))]
            answer = api.post("/memory/batch", json={"memories": items})
            assert answer.status_code == 201, answer.text  # durably queued: acknowledged
            ids += [row["memory_id"] for row in answer.json()["results"]]
    return ids


def _settled(service: EmbeddedService, count: int) -> bool:
    health = _health(service)
    queues = health.get("queues") or {}
    return (health.get("memory_count") == count and health.get("vector_count") == count
            and not any(queues.get(q) for q in ("persist", "embed", "vectors")))


def _exporter_answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def _free_port_pair() -> int:
    """Two adjacent ports both free now, below the kernel's ephemeral range: a port from that range
    (``free_port``) can be handed to any outgoing connection before the exporter binds it."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(20_000, low - 1)
        if _bindable(port) and _bindable(port + 1):
            return port
    raise RuntimeError("no two adjacent free ports")


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_quiet_start_then_ctrl_c_mid_import_with_a_stuck_worker_leaves_nothing_and_loses_nothing():
    metrics_port = _free_port_pair()
    service = EmbeddedService(env_overrides={"EMBEDDING_PROVIDER": "hash", "EMBEDDED_STOP_TIMEOUT_S": str(STOP_TIMEOUT_S),
                                             "WORKER_METRICS_PORT": str(metrics_port)})
    try:
        service.start(timeout=START_TIMEOUT_S)
        # Quiet start: both dramatiq commands export metrics, each on its own loopback port.
        wait_until(lambda: _exporter_answers(metrics_port) and _exporter_answers(metrics_port + 1), timeout=60,
                   message="both worker exporters")
        log = service.log_tail(10**7)
        assert '"level":"ERROR"' not in log and "[ERROR]" not in log and "Traceback" not in log, log

        ids = _import(service, 3000, "midimport")
        health = _health(service)
        assert health["vector_count"] < 3000 or any(health["queues"].values()), health  # really mid-import

        # A worker process that will not stop, whatever it is doing: the enricher's children
        # (not the dramatiq command itself) are frozen, so its graceful stop can never finish.
        enricher = service.processes()["enricher"]
        leader = next(pid for pid in enricher if os.getpgid(pid) == pid)  # the dramatiq command
        for pid in enricher:
            if pid != leader:
                os.kill(pid, signal.SIGSTOP)

        pids, groups = _tree(service)
        started = time.monotonic()
        service.stop(remove=False)  # Ctrl-C
        took = time.monotonic() - started
        # the children's wait, then the stores' AOF rewrite, each bounded by the stop timeout
        assert took < 3 * STOP_TIMEOUT_S, (took, service.log_tail())
        assert service.process.returncode == 0, service.log_tail()
        assert not [pid for pid in pids if alive(pid)], "a process of the launcher's tree survived"
        assert not group_members(groups), "a process of the launcher's process groups survived"
        log = service.log_tail(10**7)
        assert "enricher did not stop" in log  # the frozen one was killed, with its children
        assert "worker did not stop" not in log and "web did not stop" not in log  # the others stopped by themselves
        # a clean stop leaves each store a snapshot and (almost) no log to replay
        for store in ("broker", "graph"):
            assert incremental_bytes(service.data_dir / store) < STOP_MIN_INCR_BYTES, store
            assert any((service.data_dir / store).glob("appendonlydir/*.base.rdb")), store

        service.start(timeout=START_TIMEOUT_S)
        wait_until(lambda: _settled(service, 3000), timeout=SETTLE_TIMEOUT_S, interval=1,
                   message="every accepted memory persisted and indexed, once")
        with httpx.Client(base_url=service.url, headers=service.headers, timeout=30) as api:
            for memory_id in (ids[0], ids[1499], ids[-1]):
                assert api.get(f"/memory/{memory_id}").status_code == 200
    finally:
        service.stop()


def test_restart_after_kill_9_keeps_written_queued_and_half_processed_work():
    service = EmbeddedService(env_overrides={"EMBEDDING_PROVIDER": "hash", "EMBEDDED_STOP_TIMEOUT_S": str(STOP_TIMEOUT_S)})
    try:
        # Written: recallable when answered (201).
        service.start(timeout=START_TIMEOUT_S)
        written = []
        with httpx.Client(base_url=service.url, headers=service.headers, timeout=30) as api:
            for n in range(20):
                answer = api.post("/memory", json={"content": f"written memory {n}", "tags": ["written"]})
                assert answer.status_code == 201 and answer.json()["state"] == "recallable", answer.text
                written.append(answer.json()["memory_id"])
        service.stop(remove=False)

        # Half-processed: persisted and embedded, waiting for the vector stage (nobody consumes
        # it in this run). Queued: accepted while the worker is frozen, still in the persist queue.
        service.env_overrides["WEB_WORKER_QUEUES"] = "similarity"
        service.start(timeout=START_TIMEOUT_S)
        half = _import(service, 300, "half")
        wait_until(lambda: (lambda h: h["memory_count"] == 320 and h["queues"]["persist"] == 0
                            and h["queues"]["embed"] == 0 and h["queues"]["vectors"] > 0)(_health(service)),
                   timeout=SETTLE_TIMEOUT_S, interval=0.5, message="the batch persisted and embedded, not indexed")
        worker_group = {os.getpgid(pid) for pid in service.processes()["worker"]}
        for group in worker_group:
            os.killpg(group, signal.SIGSTOP)
        queued = _import(service, 300, "queued")
        health = _health(service)
        assert health["queues"]["persist"] >= 1 and health["vector_count"] == 20, health

        pids, _ = _tree(service)
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        service.process.wait()
        wait_until(lambda: not any(alive(pid) for pid in pids), timeout=30, message="everything killed")

        del service.env_overrides["WEB_WORKER_QUEUES"]
        started = time.monotonic()
        service.start(timeout=START_TIMEOUT_S)
        restart_s = time.monotonic() - started
        wait_until(lambda: _settled(service, 620), timeout=SETTLE_TIMEOUT_S, interval=1,
                   message="written, half-processed and queued memories all there, once")
        with httpx.Client(base_url=service.url, headers=service.headers, timeout=30) as api:
            for memory_id in (written[0], written[-1], half[0], half[-1], queued[0], queued[-1]):
                assert api.get(f"/memory/{memory_id}").status_code == 200, memory_id
        print(f"restart after kill -9: healthy in {restart_s:.1f}s")
    finally:
        service.stop()
