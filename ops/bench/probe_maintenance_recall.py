"""Recall while a maintenance run walks a kept store: what a user's agents get once an hour (sync), a day (decay), a week (creative).

    python -m ops.bench.probe_maintenance_recall --store /tmp/life_keep --cycle sync [--root <worktree>] [--set NAME=VALUE]

Starts ``make run``'s launcher (the local model unless ``--set EMBEDDING_PROVIDER=…``) on a copy
of a store a benchmark kept (``ops.bench.lifecycle --keep DIR``), with enrichment off, SIMILAR_TO
off and no scheduled sync, so that the run started here is the only background work. Recalls
every 100 ms (the lifecycle prober's questions, ``limit`` 10): ``--idle`` of them first, then
from the run's start until it settles, those also split by the last of the run's phases to have
recorded a step (``by_phase``: where in a run its cost to recall lies). ``--root`` runs another
checkout's launcher (a git
worktree of an earlier commit) to compare two versions on one store. Prints a table, appends
a row to ``ops/bench/results/probe_maintenance_recall.json``. Tooling, not product.
"""

from __future__ import annotations

import argparse
import bisect
import json
import shutil
import subprocess
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import httpx
import redis

from ops.bench.embedded import ROOT, EmbeddedService, copy_store
from ops.bench.lifecycle import questions
from pipeline.maintenance.runs import run_key

RESULTS = Path(__file__).resolve().parent / "results"
QUIET = {"ENRICHMENT_ENABLED": "false", "SIMILAR_TO_LIMIT": "0", "SYNC_INTERVAL_SECONDS": "0"}
CYCLES = ("sync", "decay", "creative", "cluster")
EVERY_S = 0.1


def percentiles(samples: list[float]) -> dict:
    ranked = sorted(samples)
    at = lambda share: round(ranked[int(share * (len(ranked) - 1))], 1)  # noqa: E731
    return {"n": len(ranked), "p50_ms": at(0.5), "p95_ms": at(0.95), "p99_ms": at(0.99), "max_ms": round(ranked[-1], 1)}


def start_run(api: httpx.Client, cycle: str) -> str:
    if cycle == "sync":
        response = api.post("/admin/sync", params={"wait": "false"}, json={})
        response.raise_for_status()
        return response.json()["run_id"]
    response = api.post("/consolidate", params={"wait": "false"}, json={"mode": cycle, "dry_run": False})
    response.raise_for_status()
    return response.json()["consolidation"]["runs"][cycle]["run_id"]


def measure(store: Path, cycle: str, root: Path, overrides: dict[str, str], idle_count: int) -> dict:
    copy = Path(tempfile.mkdtemp(prefix="mempipe-maintenance-recall-")) / "store"
    copy_store(store, copy)
    service = EmbeddedService(env_overrides={**QUIET, **overrides}, data_dir=copy, root=root)
    queries = questions(400)
    try:
        service.start(timeout=600)
        with httpx.Client(base_url=service.url, headers=service.headers, timeout=60) as api:
            asked = 0

            def recall() -> float:
                nonlocal asked
                sent = time.perf_counter()
                response = api.get("/recall", params={"query": queries[asked % len(queries)], "limit": 10})
                asked += 1
                response.raise_for_status()
                return (time.perf_counter() - sent) * 1000

            for _ in range(30):  # the model's and the shard's first calls
                recall()
            idle = []
            for _ in range(idle_count):
                sent = time.monotonic()
                idle.append(recall())
                time.sleep(max(0.0, EVERY_S - (time.monotonic() - sent)))
            started = time.monotonic()
            run_id = start_run(api, cycle)
            watcher = StepWatcher(redis.Redis(port=service.broker_port), run_id, started)
            watcher.start()
            during, sent_at, view = [], [], {}
            while True:
                sent = time.monotonic()
                sent_at.append(sent - started)
                during.append(recall())
                if len(during) % 10 == 0:
                    view = api.get(f"/consolidate/runs/{run_id}").json()["run"]
                    if view.get("status") not in ("queued", "running"):
                        break
                time.sleep(max(0.0, EVERY_S - (time.monotonic() - sent)))
            run_s = round(time.monotonic() - started, 1)
            watcher.stop()
    finally:
        service.stop(remove=False)
        shutil.rmtree(copy.parent, ignore_errors=True)
    return {"cycle": cycle, "idle": percentiles(idle), "during_run": percentiles(during), "run_s": run_s,
            "status": view.get("status"), "counts": view.get("counts"),
            "by_phase": {f"through phase {k}" if k >= 0 else "no step recorded": percentiles(v)
                         for k, v in sorted(watcher.split(sent_at, during).items())}}


class StepWatcher(threading.Thread):
    """Which of the run's phases have recorded a step, polled from its steps hash: a recall sent
    while phase k was the last to record one ran beside phase k's next page or the next phase's
    first step. Enough to place a cost in a run's phases without timing the steps themselves."""

    def __init__(self, broker: redis.Redis, run_id: str, started: float, every_s: float = 0.2):
        super().__init__(daemon=True)
        self.broker, self.run_id, self.started, self.every_s = broker, run_id, started, every_s
        self.marks: list[tuple[float, int]] = []  # (seconds since the run's start, last phase with a step)
        self._stopped = threading.Event()

    def run(self) -> None:
        while not self._stopped.is_set():
            steps = self.broker.hkeys(run_key(self.run_id) + ":steps")
            self.marks.append((time.monotonic() - self.started, max((int(k.split(b":")[0]) for k in steps), default=-1)))
            self._stopped.wait(self.every_s)

    def stop(self) -> None:
        self._stopped.set()
        self.join(timeout=10)

    def split(self, sent_at: list[float], latencies: list[float]) -> dict[int, list[float]]:
        at = [t for t, _ in self.marks]
        by_phase: dict[int, list[float]] = {}
        for sent, ms in zip(sent_at, latencies):
            i = bisect.bisect_right(at, sent) - 1
            by_phase.setdefault(self.marks[i][1] if i >= 0 else -1, []).append(ms)
        return by_phase


def commit_of(root: Path) -> str:
    done = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip()


def append_row(out: Path, row: dict, root: Path, overrides: dict[str, str]) -> None:
    """Stamp ``row`` with the checkout's commit, the settings and the date, and add it to the
    JSON list in ``out`` (the probes on a kept store keep every run, old and new side by side)."""
    row.update(commit=commit_of(root), settings=overrides, date=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    rows = json.loads(out.read_text()) if out.exists() else []
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps([*rows, row], indent=2) + "\n")


def render(row: dict) -> str:
    idle, during = row["idle"], row["during_run"]
    windows = [(f"  {name}", p) for name, p in row.get("by_phase", {}).items()]
    return "\n".join([
        f"{row['cycle']} at {row['commit']} ({row['status']} in {row['run_s']} s; {row['counts']})",
        "| recall every 100 ms | n | p50 | p95 | p99 | max ms |", "|---|---|---|---|---|---|",
        *(f"| {name} | {p['n']} | {p['p50_ms']} | {p['p95_ms']} | {p['p99_ms']} | {p['max_ms']} |"
          for name, p in (("idle", idle), (f"during {row['cycle']}", during), *windows)),
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.probe_maintenance_recall", description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True, help="a stopped store (lifecycle --keep DIR), copied first")
    parser.add_argument("--cycle", choices=CYCLES, default="sync")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose launcher runs")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="the launcher's environment")
    parser.add_argument("--idle", type=int, default=200, help="recalls before the run starts")
    parser.add_argument("--out", type=Path, default=RESULTS / "probe_maintenance_recall.json")
    args = parser.parse_args(argv)
    overrides = dict(item.split("=", 1) for item in args.set)
    row = measure(args.store, args.cycle, args.root, overrides, args.idle)
    append_row(args.out, row, args.root, overrides)
    print(render(row))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
