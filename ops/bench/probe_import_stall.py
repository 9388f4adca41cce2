"""Recall and ``/health`` latency while a batch import grows the Edge shard, per setting variant.

    python -m ops.bench.probe_import_stall --memories 60000 \\
        --variant 'EDGE_PLAIN_MAX_POINTS=0' --variant ''

For each ``--variant`` (settings for the service, in order; ``''`` = the defaults), in one run:
start the embedded default (``python -m ops.serve``, hash provider) in a scratch dir, recall
every 100 ms and read ``/health`` every second (``ops.bench.lifecycle.Prober``) while
``--memories`` real texts go through ``POST /memory/batch``, then ``--after`` seconds more, for
as long as an Edge index build is running (the build the web starts once writes are quiet falls
inside the probe; enrichment and SIMILAR_TO catch up meanwhile). Latency per phase: ``import``
(until every memory is recallable) and ``after``; the Edge index builds the web logged, with
their length. Prints one JSON object per variant and writes
``ops/bench/results/probe_import_stall.json``.

``--local-model`` runs the service as a user gets it (the local model, not the hash provider).
``--before DIR`` runs every variant on another checkout too (a worktree of an earlier commit),
after and before alternating over ``--rounds``, so one run compares the code. A table of the
recall and ``/health`` latency per phase closes the run.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from ops.bench.embedded import ROOT, EmbeddedService, index_builds as builds
from ops.bench.lifecycle import (DATA, Prober, background_done, health, latency_summary, questions, real_bodies,
                                 send_batches, wait_for, write_path_done)
from ops.bench.probe_payload_refresh import commit_of
from ops.bench.real import conversation_turns, slack_texts

RESULTS = Path(__file__).resolve().parent / "results"


def run_variant(settings: dict[str, str], bodies: list[dict], queries: list[str], args, root: Path = ROOT) -> dict:
    provider = {} if args.local_model else {"EMBEDDING_PROVIDER": "hash"}
    service = EmbeddedService(env_overrides={**provider, **settings}, root=root)
    report: dict = {"settings": settings, "commit": commit_of(root), "provider": "local" if args.local_model else "hash",
                    "load_before": [round(x, 2) for x in os.getloadavg()]}
    prober = None
    try:
        service.start(timeout=300)
        prober = Prober(service, queries)
        prober.phase = "import"
        prober.start()
        started = time.monotonic()
        send_batches(service, bodies)
        report["accepted_s"] = round(time.monotonic() - started, 1)
        wait_for(service, write_path_done(len(bodies)), args.timeout, "recallable")
        report["recallable_s"] = round(time.monotonic() - started, 1)
        prober.phase = "after"
        until = time.monotonic() + args.after
        while time.monotonic() < until and time.monotonic() - started < args.timeout:
            begun, finished, _ = builds(service)
            if begun > len(finished):
                until = max(until, time.monotonic() + 5)  # a build is running: probe until it ends
            time.sleep(1)
        report["background_done"] = background_done(health(service))
        prober.stop()
        report["phases"] = prober.summary()
        rows = [(s, status) for _, kind, s, status in prober.samples if kind == "recall"]
        checks = [(s, status) for _, kind, s, status in prober.samples if kind == "health"]
        report["all"] = {"recall": latency_summary(rows, ok=(200,)), "health": latency_summary(checks, ok=(200,))}
        begun, finished, _ = builds(service)
        report["index_builds"] = {"started": begun, "seconds": finished}
        h = health(service)
        report["vector_count"] = h.get("vector_count")
        report["load_after"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        if prober and prober.is_alive():
            prober.stop()
        service.stop()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.probe_import_stall", description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=60_000)
    parser.add_argument("--variant", action="append", default=[], metavar="'NAME=VALUE …'",
                        help="service settings for one run (repeatable, run in order; '' = defaults)")
    parser.add_argument("--after", type=float, default=120.0,
                        help="seconds to keep probing once every memory is recallable (longer while a build runs)")
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--local-model", action="store_true", help="the local model (the default a user runs), not hash")
    parser.add_argument("--before", type=Path, help="another checkout to run every variant on too (an earlier commit)")
    parser.add_argument("--rounds", type=int, default=1, help="times each variant (and checkout) runs, alternating")
    args = parser.parse_args(argv)
    variants = [dict(item.split("=", 1) for item in v.split()) for v in (args.variant or [""])]
    texts = [t for name in ("r-contributors", "houstondatavis") for t in slack_texts(DATA / "slack-dev" / name)]
    texts += [t["content"] for t in conversation_turns(10**6)]
    bodies = real_bodies(texts, args.memories)
    queries = questions(200)
    roots = {"after": ROOT} | ({"before": args.before.resolve()} if args.before else {})
    reports = []
    for round_ in range(args.rounds):
        # alternate the checkouts' order between rounds, so neither always runs on the fresher machine
        order = list(roots.items()) if round_ % 2 == 0 else list(reversed(roots.items()))
        for settings in variants:
            for code, root in order:
                reports.append({"code": code, "round": round_ + 1, **run_variant(settings, bodies, queries, args, root)})
                print(json.dumps(reports[-1]), flush=True)
    print(table(reports))
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "probe_import_stall.json"
    out.write_text(json.dumps({"memories": args.memories, "variants": reports}, indent=2))
    print(f"written {out}")
    return 0


def table(reports: list[dict]) -> str:
    lines = ["| code | commit | round | settings | phase | recalls | recall p50 / p99 / max ms | /health max ms | errors |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in reports:
        for phase, kinds in r["phases"].items():
            recall, check = kinds.get("recall", {}), kinds.get("health", {})
            errors = recall.get("errors", 0) + check.get("errors", 0)
            lines.append(f"| {r['code']} | {r['commit']} | {r['round']} | {' '.join(f'{k}={v}' for k, v in r['settings'].items()) or 'defaults'} "
                         f"| {phase} | {recall.get('count', 0)} | {recall.get('p50_ms')} / {recall.get('p99_ms')} / {recall.get('max_ms')} "
                         f"| {check.get('max_ms')} | {errors} |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
