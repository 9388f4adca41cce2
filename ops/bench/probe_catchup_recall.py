"""Recall while enrichment and SIMILAR_TO catch up after an import into a kept store: the
lifecycle's catch-up phase, in minutes instead of the hour a 100k lifecycle takes.

    python -m ops.bench.probe_catchup_recall --store /tmp/life_keep [--memories 10000] [--probe-import]
        [--import-at-once] [--root <worktree>] [--set NAME=VALUE]

Starts ``make run``'s launcher (the local model and the shipped settings unless ``--set``) on
a copy of a store a benchmark kept (``ops.bench.lifecycle --keep DIR``), with no scheduled
sync (as in the lifecycle's phases; ``--set SYNC_INTERVAL_SECONDS=3600`` for one), waits for
the backlog it was stopped with to drain, then sends ``--memories`` new real texts (the
lifecycle's Slack texts and conversation turns) through ``POST /memory/batch``. Once they are
recallable it recalls every 100 ms and reads ``/health`` every second (the lifecycle's prober)
until every queue is empty, then until no maintenance run holds a lock (a scheduled run held
back while the pipeline was busy goes on then), then 10 s idle. ``--probe-import`` probes
during the import too (the lifecycle's import under recall); ``--import-at-once`` starts the
import as soon as the service is healthy, beside the kept backlog and whatever maintenance the
start queued (a store started again after a week: ``--set`` the cycles' intervals short to
make them all due). ``--root`` runs another checkout's launcher (a git worktree of an earlier
commit) to compare two versions on one store. Prints a table, appends a row to
``ops/bench/results/probe_catchup_recall.json``. Tooling, not product.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import httpx

from ops.bench.embedded import ROOT, EmbeddedService, copy_store
from ops.bench.lifecycle import (Prober, QueueDrain, background_done, health, questions, real_bodies, send_batches,
                                 wait_for, write_path_done)
from ops.bench.probe_maintenance_recall import append_row
from ops.bench.real import DATA, conversation_turns, slack_texts

RESULTS = Path(__file__).resolve().parent / "results"
# A start whose last sync is over its interval old queues one, and a kept store's is: it would
# walk the store beside the import and the catch-up, which no lifecycle phase has.
QUIET = {"SYNC_INTERVAL_SECONDS": "0"}
EXPORTS = ("r-contributors", "houstondatavis")  # the lifecycle's


def texts_for(count: int) -> list[str]:
    texts = [t for name in EXPORTS if (DATA / "slack-dev" / name).exists() for t in slack_texts(DATA / "slack-dev" / name)]
    return texts + [t["content"] for t in conversation_turns(max(0, count - len(texts)) + 1000)]


def consolidate_status(service: EmbeddedService) -> dict:
    return httpx.get(f"{service.url}/consolidate/status", headers=service.headers, timeout=30).json()


def wait_until_settled(service: EmbeddedService, timeout: float) -> float:
    """Seconds until no maintenance run holds a lock (at once for a version that does not list them)."""
    started = time.monotonic()
    while consolidate_status(service).get("in_progress"):
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"maintenance runs still in progress after {timeout} s")
        time.sleep(1.0)
    return round(time.monotonic() - started, 1)


def maintenance_runs(service: EmbeddedService, since_epoch: float) -> list[dict]:
    """The maintenance runs of this start, finished or holding a lock: what ran beside the probes, and when."""
    status = consolidate_status(service)
    runs = status.get("in_progress", []) + status["history"]
    since = datetime.fromtimestamp(since_epoch, timezone.utc).isoformat()
    keep = ("kind", "trigger", "status", "started_at", "finished_at", "duration_s", "held_s")
    return [{k: r[k] for k in keep if k in r} for r in runs if r.get("started_at", "") >= since]


def measure(store: Path, memories: int, root: Path, overrides: dict[str, str], timeout: float,
            probe_import: bool = False, import_at_once: bool = False) -> dict:
    copy = Path(tempfile.mkdtemp(prefix="mempipe-catchup-recall-")) / "store"
    copy_store(store, copy)
    service = EmbeddedService(env_overrides={**QUIET, **overrides}, data_dir=copy, root=root)
    # New memories: numbered past anything the kept store holds, so none is a duplicate.
    bodies = real_bodies(texts_for(memories), 10_000_000 + memories, start=10_000_000)
    prober = None
    try:
        launched = time.time()
        service.start(timeout=600)
        before = health(service)
        # At once: as a user importing right after `make run`, beside what the start queued.
        settled = 0.0 if import_at_once else wait_for(service, background_done, timeout, "the kept backlog")
        stored = int(health(service).get("vector_count") or 0)
        prober = Prober(service, questions())
        if probe_import:
            prober.phase = "import"
            prober.start()
        started = time.monotonic()
        send_batches(service, bodies)
        wait_for(service, write_path_done(stored + memories), timeout, "the import recallable")
        recallable_s = round(time.monotonic() - started, 1)
        prober.phase = "catch-up"
        if not probe_import:
            prober.start()
        drain = QueueDrain()
        catch_up_s = wait_for(service, background_done, timeout, "the catch-up", watch=drain)
        # A scheduled run held back while the pipeline was busy runs now: probed as its own phase.
        prober.phase = "maintenance"
        maintenance_s = wait_until_settled(service, timeout)
        prober.phase = "idle"
        time.sleep(10)
        prober.stop()
        probes = prober.summary()
        maintenance = maintenance_runs(service, launched)
        prober = None
    finally:
        if prober and prober.is_alive():
            prober.stop()
        service.stop(remove=False)
        shutil.rmtree(copy.parent, ignore_errors=True)
    return {"memories": memories, "probe_import": probe_import, "import_at_once": import_at_once,
            "stored_before": stored, "kept_backlog": before.get("queues"), "kept_backlog_s": settled,
            "recallable_s": recallable_s, "catch_up_s": catch_up_s, "maintenance_s": maintenance_s,
            "queues": drain.report(), "probes": probes, "maintenance": maintenance}


def render(row: dict) -> str:
    lines = [f"{row['memories']:,} new memories into {row['stored_before']:,} at {row['commit']} {row['settings'] or ''}: "
             f"recallable in {row['recallable_s']} s, catch-up {row['catch_up_s']} s"
             + (f", maintenance after it {row['maintenance_s']} s" if row.get("maintenance_s") else ""),
             "| phase | kind | n | p50 | p99 | max ms | over 500 | errors |", "|---|---|---|---|---|---|---|---|"]
    for phase, kinds in row["probes"].items():
        for kind, p in kinds.items():
            lines.append(f"| {phase} | {kind} | {p['count']} | {p['p50_ms']} | {p['p99_ms']} | {p['max_ms']} | "
                         f"{p['over_500_ms']} | {p['errors']} |")
    for run in row.get("maintenance", []):
        lines.append(f"maintenance: {run['kind']} ({run['trigger']}) {run['status']} at {run['started_at'][11:19]}, "
                     f"{run.get('duration_s', '–')} s, held {run.get('held_s', 0)} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.probe_catchup_recall", description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True, help="a stopped store (lifecycle --keep DIR), copied first")
    parser.add_argument("--memories", type=int, default=10_000, help="new memories sent through the batch API")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose launcher runs")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="the launcher's environment")
    parser.add_argument("--probe-import", action="store_true",
                        help="probe during the import too (the lifecycle's import under recall), not only after it")
    parser.add_argument("--import-at-once", action="store_true",
                        help="start the import as soon as the service is healthy, beside the backlog and the "
                             "maintenance runs its start queued, instead of after them")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds allowed for each wait")
    parser.add_argument("--out", type=Path, default=RESULTS / "probe_catchup_recall.json")
    args = parser.parse_args(argv)
    overrides = dict(item.split("=", 1) for item in args.set)
    row = measure(args.store, args.memories, args.root, overrides, args.timeout, args.probe_import, args.import_at_once)
    append_row(args.out, row, args.root, overrides)
    print(render(row))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
