"""Recall while enrichment and SIMILAR_TO catch up after an import into a kept store: the
lifecycle's catch-up phase, in minutes instead of the hour a 100k lifecycle takes.

    python -m ops.bench.probe_catchup_recall --store /tmp/life_keep [--memories 10000] [--root <worktree>] [--set NAME=VALUE]

Starts ``make run``'s launcher (the local model and the shipped settings unless ``--set``) on
a copy of a store a benchmark kept (``ops.bench.lifecycle --keep DIR``), with no scheduled
sync (as in the lifecycle's phases; ``--set SYNC_INTERVAL_SECONDS=3600`` for one), waits for the backlog
it was stopped with to drain, then sends ``--memories`` new real texts (the lifecycle's Slack
texts and conversation turns) through ``POST /memory/batch``, unprobed, and once they are
recallable recalls every 100 ms and reads ``/health`` every second (the lifecycle's prober)
until every queue is empty. ``--root`` runs another checkout's launcher (a git worktree of an
earlier commit) to compare two versions on one store. Prints a table, appends a row to
``ops/bench/results/probe_catchup_recall.json``. Tooling, not product.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from ops.bench.embedded import ROOT, EmbeddedService
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


def measure(store: Path, memories: int, root: Path, overrides: dict[str, str], timeout: float) -> dict:
    copy = Path(tempfile.mkdtemp(prefix="mempipe-catchup-recall-")) / "store"
    shutil.copytree(store, copy, symlinks=True)  # the Edge shard is a link to its generation
    service = EmbeddedService(env_overrides={**QUIET, **overrides}, data_dir=copy, root=root)
    # New memories: numbered past anything the kept store holds, so none is a duplicate.
    bodies = real_bodies(texts_for(memories), 10_000_000 + memories, start=10_000_000)
    prober = None
    try:
        service.start(timeout=600)
        before = health(service)
        settled = wait_for(service, background_done, timeout, "the kept backlog")
        stored = int(health(service).get("vector_count") or 0)
        started = time.monotonic()
        send_batches(service, bodies)
        wait_for(service, write_path_done(stored + memories), timeout, "the import recallable")
        recallable_s = round(time.monotonic() - started, 1)
        prober = Prober(service, questions())
        prober.phase = "catch-up"
        prober.start()
        drain = QueueDrain()
        catch_up_s = wait_for(service, background_done, timeout, "the catch-up", watch=drain)
        prober.phase = "idle"
        time.sleep(10)
        prober.stop()
        probes = prober.summary()
        prober = None
    finally:
        if prober:
            prober.stop()
        service.stop(remove=False)
        shutil.rmtree(copy.parent, ignore_errors=True)
    return {"memories": memories, "stored_before": stored, "kept_backlog": before.get("queues"), "kept_backlog_s": settled,
            "recallable_s": recallable_s, "catch_up_s": catch_up_s, "queues": drain.report(), "probes": probes}


def render(row: dict) -> str:
    lines = [f"{row['memories']:,} new memories into {row['stored_before']:,} at {row['commit']} {row['settings'] or ''}: "
             f"recallable in {row['recallable_s']} s, catch-up {row['catch_up_s']} s",
             "| phase | kind | n | p50 | p99 | max ms | over 500 | errors |", "|---|---|---|---|---|---|---|---|"]
    for phase, kinds in row["probes"].items():
        for kind, p in kinds.items():
            lines.append(f"| {phase} | {kind} | {p['count']} | {p['p50_ms']} | {p['p99_ms']} | {p['max_ms']} | "
                         f"{p['over_500_ms']} | {p['errors']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.probe_catchup_recall", description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True, help="a stopped store (lifecycle --keep DIR), copied first")
    parser.add_argument("--memories", type=int, default=10_000, help="new memories sent through the batch API")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose launcher runs")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="the launcher's environment")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds allowed for each wait")
    parser.add_argument("--out", type=Path, default=RESULTS / "probe_catchup_recall.json")
    args = parser.parse_args(argv)
    overrides = dict(item.split("=", 1) for item in args.set)
    row = measure(args.store, args.memories, args.root, overrides, args.timeout)
    append_row(args.out, row, args.root, overrides)
    print(render(row))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
