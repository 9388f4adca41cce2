"""How many points enrichment writes again, per memory it enriches, on real text.

    python -m ops.bench.probe_payload_refresh [--before DIR] [--limit 4000]

Any update moves an indexed Edge point out of its HNSW segment, to be scanned by every search
until the next index build (``ops.bench.probe_edge_moves``), and counts toward that build. This
starts ``make run``'s launcher (hash provider, the shipped settings otherwise: enrichment with
spaCy, SIMILAR_TO) on a fresh store per corpus, stores the corpus's texts through
``POST /memory/batch`` as the growth benchmark does, waits until every queue is empty and the
shard is flushed, and reads the shard's record of its writes since the last index build
(``mempipe_changes.json``): one upsert per memory, so what is left over is enrichment's payload
rewrites (decay and the other cycles do not run in that time). The corpora: the dev Slack
exports as the importer maps them, and the LoCoMo and REALTALK dev turns.

``--before DIR`` also runs the launcher of another checkout (a worktree of an earlier commit)
on the same texts, so one run gives both figures. Prints a table and writes
``ops/bench/results/probe_payload_refresh.json``. Tooling, not product.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

from ops.bench.embedded import ROOT, EmbeddedService
from ops.bench.lifecycle import background_done, health, real_bodies, send_batches, wait_for
from ops.bench.real import DATA, conversation_turns, slack_texts
from ops.bench.stack import shard_changes

RESULTS = Path(__file__).resolve().parent / "results"
SETTINGS = {"EMBEDDING_PROVIDER": "hash", "EDGE_FLUSH_INTERVAL_S": "1"}


def corpora(limit: int) -> dict[str, list[str]]:
    slack = [t for name in ("r-contributors", "houstondatavis") for t in slack_texts(DATA / "slack-dev" / name)]
    return {"slack-dev": slack[:limit], "locomo+realtalk-dev turns": [t["content"] for t in conversation_turns(limit)]}


def measure(root: Path, texts: list[str], timeout: float) -> dict:
    service = EmbeddedService(env_overrides=SETTINGS, root=root)
    try:
        service.start()
        started = time.monotonic()
        send_batches(service, real_bodies(texts, len(texts)))
        written = time.monotonic() - started
        idle = wait_for(service, background_done, timeout, "every queue empty")
        time.sleep(3 * float(SETTINGS["EDGE_FLUSH_INTERVAL_S"]))  # the web flushes within an interval of a write
        memories = health(service)["memory_count"]
        changes = shard_changes(service.data_dir)
        return {"memories": memories, "shard_changes": changes, "payload_rewrites": changes - memories,
                "rewrites_per_memory": round((changes - memories) / memories, 3) if memories else None,
                "written_s": round(written, 1), "idle_after_last_write_s": idle}
    finally:
        service.stop()


def commit_of(root: Path) -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.probe_payload_refresh", description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another checkout to run on the same texts (an earlier commit)")
    parser.add_argument("--limit", type=int, default=4000, help="texts per corpus")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--out", type=Path, default=RESULTS / "probe_payload_refresh.json")
    args = parser.parse_args()

    roots = {"after": ROOT} | ({"before": args.before.resolve()} if args.before else {})
    report: dict = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"), "settings": SETTINGS,
                    "commits": {name: commit_of(root) for name, root in roots.items()}, "rows": []}
    for corpus, texts in corpora(args.limit).items():
        for name, root in roots.items():
            row = {"corpus": corpus, "code": name, "commit": report["commits"][name], **measure(root, texts, args.timeout)}
            report["rows"].append(row)
            print(json.dumps(row), flush=True)

    print("\n| corpus | code | memories | shard writes | payload rewrites | per memory | idle after the last write s |")
    print("|---|---|---|---|---|---|---|")
    for r in report["rows"]:
        print(f"| {r['corpus']} | {r['code']} ({r['commit']}) | {r['memories']:,} | {r['shard_changes']:,} | "
              f"{r['payload_rewrites']:,} | {r['rewrites_per_memory']} | {r['idle_after_last_write_s']} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
