"""What a decay run does to an indexed Edge shard: the points it writes, and recall after it.

    python -m ops.bench.probe_decay_moves [--before DIR] [--memories 100000] [--plain-max 20000]

Any write to a point moves it out of its HNSW segment, to be scanned by every search until the
next index build (``ops.bench.probe_edge_moves``). This starts ``make run``'s launcher (hash
provider; enrichment and SIMILAR_TO off, so that decay is the only writer after the import;
``EDGE_PLAIN_MAX_POINTS`` lowered so that a store of this size is indexed as a larger one
would be) on a fresh store, stores ``--memories`` real texts through ``POST /memory/batch`` as
the growth benchmark does, waits for the index build, stores one memory more (so that the
shard's record of its writes since the build is flushed, whichever commit runs), times the
growth benchmark's plain recalls, runs one decay cycle, then reads the shard's record of its
writes since the build (``mempipe_changes.json``) and times the same recalls again, right away
(before any build the decay's writes may start has swapped in).

``--before DIR`` also runs the launcher of another checkout (a worktree of an earlier commit)
on the same texts, so one run gives both figures. Prints a table and writes
``ops/bench/results/probe_decay_moves.json``. Tooling, not product.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime, timezone
from pathlib import Path

from ops.bench.embedded import ROOT, EmbeddedService, index_builds
from ops.bench.lifecycle import (background_done, consolidation, health, questions, real_bodies, recall_latency,
                                 send_batches, wait_for, wait_for_index_build, write_path_done)
from ops.bench.probe_payload_refresh import commit_of
from ops.bench.real import DATA, conversation_turns, slack_texts
from ops.bench.stack import shard_changes

RESULTS = Path(__file__).resolve().parent / "results"
FLUSH_S = 1.0


def settings(plain_max: int) -> dict[str, str]:
    return {"EMBEDDING_PROVIDER": "hash", "ENRICHMENT_ENABLED": "false", "SIMILAR_TO_LIMIT": "0",
            "EDGE_PLAIN_MAX_POINTS": str(plain_max), "EDGE_FLUSH_INTERVAL_S": str(FLUSH_S)}


def texts() -> list[str]:
    slack = [t for name in ("r-contributors", "houstondatavis") for t in slack_texts(DATA / "slack-dev" / name)]
    return slack + [t["content"] for t in conversation_turns(10**6)]


def measure(root: Path, corpus: list[str], memories: int, plain_max: int, timeout: float) -> dict:
    service = EmbeddedService(env_overrides=settings(plain_max), root=root)
    queries = questions(200)
    try:
        service.start()
        builds_before = index_builds(service)
        send_batches(service, real_bodies(corpus, memories))
        wait_for(service, write_path_done(memories), timeout, f"{memories} recallable")
        wait_for(service, background_done, timeout, "every queue empty")
        build = wait_for_index_build(service, timeout, builds_before)
        # One more memory: the web records the shard's changes at a flush (within an interval
        # of a write), and a build of an earlier commit left its record as it was before it.
        send_batches(service, real_bodies(corpus, memories + 1, start=memories))
        wait_for(service, write_path_done(memories + 1), timeout, "one more memory recallable")
        time.sleep(3 * FLUSH_S)
        changes_built = shard_changes(service.data_dir)
        recall_built = recall_latency(service, queries, tagged=False)
        decay = consolidation(service, timeout, modes=("decay",))["decay"]
        wait_for(service, background_done, timeout, "the decay's messages applied")
        time.sleep(3 * FLUSH_S)
        changes_decayed = shard_changes(service.data_dir)
        recall_decayed = recall_latency(service, queries, tagged=False)
        return {"memories": health(service)["memory_count"], "index_build": build,
                "changes_after_build": changes_built, "decay": decay,
                "points_written_by_decay": changes_decayed - changes_built,
                "recall_plain_built": recall_built, "recall_plain_after_decay": recall_decayed}
    finally:
        service.stop()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.probe_decay_moves", description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another checkout to run on the same texts (an earlier commit)")
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--plain-max", type=int, default=20_000, help="EDGE_PLAIN_MAX_POINTS for the run")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--out", type=Path, default=RESULTS / "probe_decay_moves.json")
    args = parser.parse_args()

    roots = {"after": ROOT} | ({"before": args.before.resolve()} if args.before else {})
    report: dict = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    "settings": settings(args.plain_max), "commits": {name: commit_of(root) for name, root in roots.items()},
                    "rows": []}
    corpus = texts()
    for name, root in roots.items():
        row = {"code": name, "commit": report["commits"][name],
               **measure(root, corpus, args.memories, args.plain_max, args.timeout)}
        report["rows"].append(row)
        print(json.dumps(row), flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")

    print("\n| code | memories | decay s | points decay wrote | recall p50 / p95 ms, built | right after decay |")
    print("|---|---|---|---|---|---|")
    for r in report["rows"]:
        built, decayed = r["recall_plain_built"], r["recall_plain_after_decay"]
        print(f"| {r['code']} ({r['commit']}) | {r['memories']:,} | {r['decay']['duration_s']} | "
              f"{r['points_written_by_decay']:,} | {built['p50_ms']} / {built['p95_ms']} | "
              f"{decayed['p50_ms']} / {decayed['p95_ms']} |")


if __name__ == "__main__":
    main()
