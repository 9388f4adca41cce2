"""Recall while a maintenance run walks a kept store: what a user's agents get once an hour (sync), a day (decay), a week (creative).

    python -m ops.bench.probe_maintenance_recall --store /tmp/life_keep --cycle sync [--root <worktree>] [--set NAME=VALUE]

Starts ``make run``'s launcher (the local model unless ``--set EMBEDDING_PROVIDER=…``) on a copy
of a store a benchmark kept (``ops.bench.lifecycle --keep DIR``), with enrichment off, SIMILAR_TO
off and no scheduled sync, so that the run started here is the only background work. Recalls
every 100 ms (the lifecycle prober's questions, ``limit`` 10): ``--idle`` of them first, then
from the run's start until it settles. ``--root`` runs another checkout's launcher (a git
worktree of an earlier commit) to compare two versions on one store. Prints a table, appends
a row to ``ops/bench/results/probe_maintenance_recall.json``. Tooling, not product.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import httpx

from ops.bench.embedded import ROOT, EmbeddedService, copy_store
from ops.bench.lifecycle import questions

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
            during, view = [], {}
            while True:
                sent = time.monotonic()
                during.append(recall())
                if len(during) % 10 == 0:
                    view = api.get(f"/consolidate/runs/{run_id}").json()["run"]
                    if view.get("status") not in ("queued", "running"):
                        break
                time.sleep(max(0.0, EVERY_S - (time.monotonic() - sent)))
            run_s = round(time.monotonic() - started, 1)
    finally:
        service.stop(remove=False)
        shutil.rmtree(copy.parent, ignore_errors=True)
    return {"cycle": cycle, "idle": percentiles(idle), "during_run": percentiles(during), "run_s": run_s,
            "status": view.get("status"), "counts": view.get("counts")}


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
    return "\n".join([
        f"{row['cycle']} at {row['commit']} ({row['status']} in {row['run_s']} s; {row['counts']})",
        "| recall every 100 ms | n | p50 | p95 | p99 | max ms |", "|---|---|---|---|---|---|",
        *(f"| {name} | {p['n']} | {p['p50_ms']} | {p['p95_ms']} | {p['p99_ms']} | {p['max_ms']} |"
          for name, p in (("idle", idle), (f"during {row['cycle']}", during))),
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
