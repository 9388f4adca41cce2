"""Start the embedded default (``python -m ops.serve``) in a scratch dir, for fuzz and soak runs.

Free ports, fresh tokens, its own data dir: it never touches a service already running on
this machine. The launcher's own process tree is what a run measures (RSS per process).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from ops.bench.suite.procs import descendants
from ops.redis_servers import free_port
from ops.tokens import new_token
from pipeline.vectors import INDEX_BUILD_FAILED, INDEX_BUILD_FINISHED, INDEX_BUILD_STARTED

ROOT = Path(__file__).resolve().parents[2]


def copy_store(store: Path, dest: Path) -> None:
    """Copy a kept store for a probe to start on, and wait until the copy is on disk.

    Without the wait, the copy's dirty pages are still being written back when the service
    starts, and its first fsync (the Edge shard's first flush, as an import's first vectors
    arrive) waits for all of them while holding the web's GIL: a 500-830 ms recall that a user
    restarting their own store never sees (docs/benchmarks-log.md, session 51).
    """
    shutil.copytree(store, dest, symlinks=True)  # the Edge shard is a link to its generation
    os.sync()


@dataclass
class EmbeddedService:
    env_overrides: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    broker_port: int = field(default_factory=free_port)
    graph_port: int = field(default_factory=free_port)
    api_token: str = field(default_factory=new_token)
    admin_token: str = field(default_factory=new_token)
    data_dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="mempipe-embedded-")))
    # True: pass no tokens, as a newcomer's first `make run` does; the launcher generates them
    # (or finds them in the data dir) and they are read back from its tokens.json.
    tokens_from_launcher: bool = False
    # The checkout whose launcher runs: another one (a worktree of an earlier commit) lets a
    # probe compare two versions of the product in one run.
    root: Path = ROOT
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_token}", "X-Admin-Token": self.admin_token}

    def start(self, timeout: float = 180.0) -> None:
        env = {
            **os.environ,
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            "REDIS_URL": f"redis://127.0.0.1:{self.broker_port}/0",
            "FALKORDB_PORT": str(self.graph_port),
            "MEMPIPE_DATA_DIR": str(self.data_dir),
            "AUTOMEM_API_TOKEN": self.api_token,
            "ADMIN_API_TOKEN": self.admin_token,
            "WORKER_METRICS_PORT": "0",
            "WORKER_METRICS_DIR": str(self.data_dir / "worker-metrics"),
            "HF_HUB_OFFLINE": "1",
            **self.env_overrides,
        }
        if self.tokens_from_launcher:
            del env["AUTOMEM_API_TOKEN"], env["ADMIN_API_TOKEN"]
        log = open(self.data_dir / "serve.log", "ab")
        # A session of its own, as `make run` in a terminal of its own: what drives it (an
        # importer, a benchmark's recalls) runs in another, as a user's client would.
        self.process = subprocess.Popen([sys.executable, "-m", "ops.serve"], cwd=self.root, env=env, stdout=log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"ops.serve exited:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).json().get("status") == "healthy":
                    if self.tokens_from_launcher:
                        self._read_tokens()
                    return
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"embedded service not healthy within {timeout}s:\n{self.log_tail()}")

    def _read_tokens(self) -> None:
        tokens = json.loads((self.data_dir / "tokens.json").read_text())
        self.api_token, self.admin_token = tokens["AUTOMEM_API_TOKEN"], tokens["ADMIN_API_TOKEN"]

    def log_tail(self, chars: int = 3000) -> str:
        path = self.data_dir / "serve.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def processes(self) -> dict[str, list[int]]:
        """The launcher and its descendants, by a short name (web, worker, enricher, clock, redis)."""
        if not self.process:
            return {}
        found: dict[str, list[int]] = {"serve": [self.process.pid]}
        for pid in descendants(self.process.pid):
            found.setdefault(self._role(pid), []).append(pid)
        return found

    def _role(self, pid: int) -> str:
        try:
            cmd = (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return "gone"
        if "redis-server" in cmd:
            # redis rewrites its process title to "redis-server HOST:PORT": tell them by port
            return "redis-graph" if f":{self.graph_port}" in cmd else "redis-broker"
        if "uvicorn" in cmd:
            return "web"
        if "ops.clock" in cmd:
            return "clock"
        if "dramatiq" in cmd:
            return "enricher" if cmd.rstrip().endswith(" enrich") else "worker"
        return "other"

    def stop(self, remove: bool = True) -> None:
        if self.process and self.process.poll() is None:
            # Ctrl-C as a terminal sends it: SIGINT to the launcher's whole process group. The
            # launcher stops its children in order; they and the stores are in groups of their own.
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(90)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if remove:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> "EmbeddedService":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def rss_mb(pid: int, field: str = "VmRSS") -> float | None:
    """A process's resident memory in MB: ``VmRSS`` (all of it), ``RssAnon`` (its own heap) or
    ``RssFile`` (pages of mapped files, such as the Edge shard's segments, that the kernel may
    drop and read again)."""
    try:
        for line in (Path("/proc") / str(pid) / "status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def index_builds(service: EmbeddedService) -> tuple[int, list[float], int]:
    """(Edge index builds started, lengths in s of those finished, builds failed), from the service's log."""
    log = (service.data_dir / "serve.log").read_text(errors="replace")
    finished = [float(m) for m in re.findall(re.escape(INDEX_BUILD_FINISHED) + r'.*?"seconds": ?([0-9.]+)', log)]
    return log.count(INDEX_BUILD_STARTED), finished, log.count(INDEX_BUILD_FAILED)
