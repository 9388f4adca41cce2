"""Where a restart's seconds go, and what keeps a stop long: a timeline of each phase.

    python -m ops.bench.probe_restart build --memories 100000 --keep /tmp/store-100k
    python -m ops.bench.probe_restart restart --keep /tmp/store-100k --rounds 3

``build`` starts ``python -m ops.serve`` (hash embedder) in a scratch dir, writes real texts
through ``POST /memory/batch`` (as ``ops.bench.lifecycle --growth`` does) until every one is
recallable, then stops it with Ctrl-C (timed per process) and copies the stopped data dir to
``--keep``: a pristine store, with whatever enrichment and SIMILAR_TO backlog was still queued.
``--stop kill`` keeps instead what ``kill -9`` of every process leaves, ``--busy`` s after that.

``restart`` copies that store into a scratch dir for every round (so each round loads the same
thing), starts the launcher with its output read line by line and stamped, polls ``/health``
every 50 ms, then checks the count and one recall, waits ``--busy`` seconds (the enricher at its
backlog) and stops with Ctrl-C. Per round it reports, in seconds from the launcher's spawn:
each store's load (from its own log), the launcher's and the web's start-up lines, each
Dramatiq command ready, the first ``/health`` answer and the first ``healthy``; and for the
stop, when each process of the tree was gone. Prints a table, writes
``ops/bench/results/probe_restart.json``. Tooling, not product.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import httpx

from ops.bench.embedded import EmbeddedService, copy_store
from ops.bench.suite.procs import alive, descendants

RESULTS = Path(__file__).resolve().parent / "results"

# Lines of the launcher's output that mark a phase: (name, pattern). First match wins per name.
MARKS = [
    ("broker up", re.compile(r"broker redis on :")),
    ("children spawned", re.compile(r"mempipe: API on ")),
    ("web: process started", re.compile(r"Started server process")),
    ("web: startup begins", re.compile(r"Waiting for application startup")),
    ("web: startup complete", re.compile(r"Application startup complete")),
    ("web: listening", re.compile(r"Uvicorn running on")),
]
READY = re.compile(r"Worker process is ready for action")  # JSON logs carry no pid: counted in order
REDIS_TIME = re.compile(r"^\d+:\w (\d+ \w+ \d+ [\d:.]+) ")
# (event, pattern) of a redis-server's own log, stamped by redis itself (wall clock, ms)
REDIS_MARKS = [("started", re.compile(r"Redis version=")),
               ("loaded", re.compile(r"DB loaded from append only file")),
               ("ready", re.compile(r"Ready to accept connections"))]


class Launcher:
    """``python -m ops.serve`` on a data dir, its output stamped with seconds since the spawn."""

    def __init__(self, service: EmbeddedService):
        self.service = service
        self.lines: list[tuple[float, str]] = []
        self.spawned_wall = 0.0
        self.spawned = 0.0

    def start(self) -> None:
        s = self.service
        env = {**os.environ, "HOST": "127.0.0.1", "PORT": str(s.port),
               "REDIS_URL": f"redis://127.0.0.1:{s.broker_port}/0", "FALKORDB_PORT": str(s.graph_port),
               "MEMPIPE_DATA_DIR": str(s.data_dir), "AUTOMEM_API_TOKEN": s.api_token,
               "ADMIN_API_TOKEN": s.admin_token, "WORKER_METRICS_PORT": "0", "HF_HUB_OFFLINE": "1",
               "PYTHONUNBUFFERED": "1", **s.env_overrides}
        self.spawned_wall, self.spawned = time.time(), time.monotonic()
        s.process = subprocess.Popen([sys.executable, "-m", "ops.serve"], cwd=Path(__file__).resolve().parents[2],
                                     env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        with open(self.service.data_dir / "serve.log", "a") as log:
            for line in self.service.process.stdout:
                self.lines.append((time.monotonic() - self.spawned, line.rstrip()))
                log.write(line)

    def marks(self) -> dict[str, float]:
        found: dict[str, float] = {}
        ready = 0
        for at, line in self.lines:
            for name, pattern in MARKS:
                if name not in found and pattern.search(line):
                    found[name] = round(at, 2)
            if READY.search(line):
                ready += 1
                found[f"dramatiq process {ready} ready"] = round(at, 2)
        return found

    def redis_marks(self, store: str) -> dict[str, float]:
        """Seconds from the spawn, by the store's own log (this start's lines only)."""
        path = self.service.data_dir / store / "redis.log"
        found: dict[str, float] = {}
        for line in path.read_text(errors="replace").splitlines() if path.exists() else []:
            stamp = REDIS_TIME.match(line)
            if not stamp:
                continue
            at = datetime.strptime(stamp.group(1), "%d %b %Y %H:%M:%S.%f").timestamp() - self.spawned_wall
            if at < -1:
                continue  # an earlier start's line
            for name, pattern in REDIS_MARKS:
                if pattern.search(line):
                    found[name] = round(at, 2)
        return found


def poll_health(service: EmbeddedService, since: float, timeout: float) -> dict[str, float]:
    """Seconds (from ``since``) to the first answer of any kind and to the first ``healthy``."""
    found: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=5) as client:
        while time.monotonic() < deadline:
            if service.process.poll() is not None:
                raise RuntimeError("ops.serve exited during the start")
            try:
                answer = client.get(f"{service.url}/health")
                found.setdefault("health: first answer", round(time.monotonic() - since, 2))
                if answer.json().get("status") == "healthy":
                    found["health: healthy"] = round(time.monotonic() - since, 2)
                    return found
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.05)
    raise RuntimeError(f"not healthy within {timeout}s")


def timed_stop(service: EmbeddedService, timeout: float = 90) -> dict:
    """Ctrl-C the launcher; seconds until each process of its tree was gone."""
    tree = {pid: service._role(pid) for pid in descendants(service.process.pid)}
    started = time.monotonic()
    service.process.send_signal(signal.SIGINT)
    gone: dict[str, float] = {}
    while time.monotonic() - started < timeout:
        for pid, role in tree.items():
            key = f"{role} {pid}"
            if key not in gone and not alive(pid):
                gone[key] = round(time.monotonic() - started, 2)
        if service.process.poll() is not None and len(gone) == len(tree):
            break
        time.sleep(0.02)
    service.process.wait(timeout)
    return {"stop_s": round(time.monotonic() - started, 2), "gone": gone,
            "left": [pid for pid in tree if alive(pid)]}


# One data dir for every run, the build's and each round's: the shard's owner record in the
# broker names its path, and a `kill -9` leaves it behind; the same path takes it over at once
# (as `make run` after a crash does), another would wait out its expiry.
RUN_DIR = Path(tempfile.gettempdir()) / "mempipe-probe-restart-run"


def scratch_service(store: Path | None, overrides: dict[str, str]) -> EmbeddedService:
    data_dir = RUN_DIR
    shutil.rmtree(data_dir, ignore_errors=True)
    if store:
        copy_store(store, data_dir)
    else:
        data_dir.mkdir()
        for log in data_dir.glob("*.log"):
            log.unlink()
    return EmbeddedService(env_overrides={"EMBEDDING_PROVIDER": "hash", **overrides}, data_dir=data_dir)


def build(args: argparse.Namespace) -> dict:
    from ops.bench.lifecycle import send_batches, wait_for, write_path_done, real_bodies
    from ops.bench.real import DATA, conversation_turns, slack_texts

    texts = [t for name in ("r-contributors", "houstondatavis") for t in slack_texts(DATA / "slack-dev" / name)]
    texts += [t["content"] for t in conversation_turns(10**6)]
    service = scratch_service(None, dict(args.set))
    launcher = Launcher(service)
    launcher.start()
    poll_health(service, launcher.spawned, args.start_timeout)
    started = time.monotonic()
    try:
        send_batches(service, real_bodies(texts, args.memories))
        wait_for(service, write_path_done(args.memories), 3600, "recallable")
    except BaseException:
        timed_stop(service)
        raise
    written = round(time.monotonic() - started, 1)
    backlog = httpx.get(f"{service.url}/health", timeout=30).json().get("queues")
    if args.stop == "kill":
        from ops.bench.restart import kill_all

        time.sleep(args.busy)  # what a running service has (or has not) flushed a few seconds after an import
        started = time.monotonic()
        kill_all(service)
        stop = {"stop_s": round(time.monotonic() - started, 2), "how": "kill -9"}
    else:
        stop = timed_stop(service)
    shutil.rmtree(args.keep, ignore_errors=True)
    shutil.copytree(service.data_dir, args.keep, symlinks=True)
    shutil.rmtree(service.data_dir, ignore_errors=True)
    return {"mode": "build", "memories": args.memories, "write_s": written, "backlog": backlog, "stop": stop,
            "kept": str(args.keep)}


def evict_page_cache(roots: list[Path]) -> int:
    """Drop every file under ``roots`` from the page cache (posix_fadvise DONTNEED, clean pages
    only: the kernel keeps what is dirty or mapped), as a machine that was rebooted, or has
    paged out what went unused, would have them; returns the number of files."""
    evicted = 0
    for root in roots:
        for directory, _dirs, names in os.walk(root):
            for name in names:
                try:
                    fd = os.open(os.path.join(directory, name), os.O_RDONLY)
                except OSError:
                    continue
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                    evicted += 1
                finally:
                    os.close(fd)
    return evicted


def restart_round(args: argparse.Namespace) -> dict:
    service = scratch_service(Path(args.keep), dict(args.set))
    if args.cold:
        os.sync()  # the store just copied in: written back first, so that its pages can go too
        evict_page_cache([Path(sys.prefix), Path(sys.base_prefix), service.data_dir])
    launcher = Launcher(service)
    try:
        launcher.start()
        phases = poll_health(service, launcher.spawned, args.start_timeout)
        health = httpx.get(f"{service.url}/health", timeout=30).json()
        recall = httpx.get(f"{service.url}/recall", headers=service.headers, timeout=30,
                           params={"query": "release", "limit": 5})
        phases.update(launcher.marks())
        for store in ("broker", "graph"):
            phases.update({f"{store} {k}": v for k, v in launcher.redis_marks(store).items()})
        time.sleep(args.busy)
        stop = timed_stop(service)
        stop["lines"] = [line for at, line in launcher.lines if "did not stop" in line or "killing" in line]
        return {"phases": dict(sorted(phases.items(), key=lambda kv: kv[1])), "memory_count": health.get("memory_count"),
                "vector_count": health.get("vector_count"), "queues": health.get("queues"),
                "recall_status": recall.status_code, "recall_hits": len(recall.json().get("results", [])),
                "stop": stop, "load": round(os.getloadavg()[0], 2)}
    finally:
        if service.process and service.process.poll() is None:
            service.process.kill()
        for pid in descendants(os.getpid()):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        if args.log_dir:
            args.log_dir.mkdir(parents=True, exist_ok=True)
            shutil.copy(service.data_dir / "serve.log", args.log_dir / f"serve-{int(time.time())}.log")
        shutil.rmtree(service.data_dir, ignore_errors=True)


def render(report: dict) -> str:
    if report["mode"] == "build":
        return json.dumps(report, indent=1)
    out = []
    for n, row in enumerate(report["rounds"], 1):
        out.append(f"round {n}: load {row['load']}, memories {row['memory_count']} / vectors {row['vector_count']}, "
                   f"recall {row['recall_status']} ({row['recall_hits']} hits), queues {row['queues']}")
        for name, at in row["phases"].items():
            out.append(f"  {at:>7.2f}  {name}")
        stop = row["stop"]
        out.append(f"  stop {stop['stop_s']} s; gone: " + ", ".join(f"{k} {v}" for k, v in sorted(stop["gone"].items(), key=lambda kv: kv[1]))
                   + (f"; left {stop['left']}" if stop["left"] else "") + "".join(f"\n    {line}" for line in stop["lines"]))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("build", "restart"))
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, required=True, help="the stopped store (written by build, read by restart)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--busy", type=float, default=5.0, help="seconds between healthy and the Ctrl-C (build --stop kill: "
                        "between recallable and the kill)")
    parser.add_argument("--stop", choices=("ctrl-c", "kill"), default="ctrl-c", help="how build stops the service it kept")
    parser.add_argument("--start-timeout", type=float, default=300)
    parser.add_argument("--set", action="append", default=[], type=lambda kv: tuple(kv.split("=", 1)),
                        help="NAME=VALUE for the launcher's environment (repeatable)")
    parser.add_argument("--cold", action="store_true", help="restart: before each round, drop the interpreter's "
                        "environment (libraries, model), its installation and the round's store from the page cache")
    parser.add_argument("--label", default="")
    parser.add_argument("--log-dir", type=Path, help="keep each round's launcher output here")
    args = parser.parse_args(argv)
    if args.mode == "build":
        report = build(args)
    else:
        report = {"mode": "restart", "store": str(args.keep), "rounds": []}
        for _ in range(args.rounds):
            report["rounds"].append(restart_round(args))
            print(render({"mode": "restart", "rounds": report["rounds"][-1:]}), flush=True)
    report |= {"label": args.label, "cold": args.cold, "set": dict(args.set), "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    if report["mode"] == "build":
        print(render(report))
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "probe_restart.json"
    runs = json.loads(path.read_text()) if path.exists() else []
    path.write_text(json.dumps([*runs, report], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
