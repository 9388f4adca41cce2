"""Recall's latency on a store a benchmark kept, with nothing else running in the web.

    python -m ops.bench.probe_recall_store --store /tmp/store-1m [--rounds 2] [--queries 200]

``ops.bench.lifecycle --growth N --keep DIR`` times recall right after a size's index build,
with that size's enrichment and SIMILAR_TO catch-up running in the web beside it (hours of it
at a million). This starts ``make run``'s launcher (hash provider) on the kept store itself
with SIMILAR_TO linking off (its queued messages are consumed without work) and the enricher's
processes paused (SIGSTOP: its backlog stays queued, untouched, and goes on after SIGCONT at
the stop), waits until the similarity queue is empty, then times the growth benchmark's
recalls (plain and tag-scoped) ``--rounds`` times: recall with nothing else running, on the
shard as the kept store has it. Prints a table, writes
``ops/bench/results/probe_recall_store.json``. Tooling, not product.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import time
from datetime import datetime, timezone
from pathlib import Path

from ops.bench.embedded import EmbeddedService
from ops.bench.lifecycle import health, questions, recall_latency, wait_for, web_rss

RESULTS = Path(__file__).resolve().parent / "results"
QUIET = {"EMBEDDING_PROVIDER": "hash", "ENRICHMENT_ENABLED": "false", "SIMILAR_TO_LIMIT": "0"}


def signal_enricher(service: EmbeddedService, signum: int) -> list[int]:
    pids = service.processes().get("enricher", [])
    for pid in pids:
        os.kill(pid, signum)
    return pids


def measure(store: Path, rounds: int, queries: list[str], start_timeout: float) -> dict:
    service = EmbeddedService(env_overrides=QUIET, data_dir=store)
    report: dict = {"store": str(store), "settings": QUIET, "rounds": []}
    started = time.monotonic()
    try:
        service.start(timeout=start_timeout)
        report["healthy_s"] = round(time.monotonic() - started, 1)
        report["enricher_paused"] = signal_enricher(service, signal.SIGSTOP)
        report["similarity_empty_s"] = wait_for(service, lambda h: not (h.get("queues") or {}).get("similarity"),
                                                3600, "similarity queue empty")
        report["queues"] = health(service).get("queues")
        report["memory_count"] = health(service).get("memory_count")
        for _ in range(rounds):
            report["rounds"].append({"plain": recall_latency(service, queries, tagged=False),
                                     "tagged": recall_latency(service, queries, tagged=True),
                                     "load": round(os.getloadavg()[0], 2)})
        report["web_rss_mb"] = web_rss(service)
    finally:
        signal_enricher(service, signal.SIGCONT)  # a stopped process would not stop
        service.stop(remove=False)
    return report


def render(report: dict) -> str:
    lines = [f"{report.get('memory_count')} memories, the enricher paused, SIMILAR_TO off; healthy in {report.get('healthy_s')} s",
             "| round | plain p50 / p95 / max ms | tag-scoped p50 / p95 / max ms | load |", "|---|---|---|---|"]
    for n, row in enumerate(report["rounds"], 1):
        plain, tagged = row["plain"], row["tagged"]
        lines.append(f"| {n} | {plain['p50_ms']} / {plain['p95_ms']} / {plain['max_ms']} | "
                     f"{tagged['p50_ms']} / {tagged['p95_ms']} / {tagged['max_ms']} | {row['load']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.probe_recall_store", description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True, help="a stopped store (lifecycle --growth N --keep DIR)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--start-timeout", type=float, default=600)
    parser.add_argument("--out", type=Path, default=RESULTS / "probe_recall_store.json")
    args = parser.parse_args(argv)
    report = measure(args.store, args.rounds, questions(args.queries), args.start_timeout)
    report["date"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(render(report))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
