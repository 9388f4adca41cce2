"""Score each conversation with the query adapter that never saw it: the whole ranking, cross-validated.

    python -m ops.bench.train_query_adapter --cross-validate --held-out-dir /tmp/held-out
    python -m ops.bench.quality --corpora realtalk-dev --no-after-write --keep-rankings \\
        --variant RECALL_QUERY_ADAPTER=off \\
        --variant RECALL_QUERY_ADAPTER=/tmp/held-out/held-out-rt1.npz … --out /tmp/q.json
    python -m ops.bench.quality_held_out /tmp/q.json [--maps /tmp/held-out]

The adapter shipped with the local model is fitted on every dev conversation, so the dev
corpora's scores with it are in-sample. This reads one ``ops.bench.quality`` result kept with
``--keep-rankings`` in which one variant per conversation names the map fitted without it
(``held-out-<conversation>.npz``), takes each question's ranking from its own conversation's
variant, and scores them together against the ``off`` variant of the same ingest: recall@5 /
recall@10 per category and overall. Prints a table; tooling, not product.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path

from ops.bench.locomo import SCORED_CATEGORIES, evidence_recall, load, questions
from ops.bench.quality import data_root

HELD_OUT = re.compile(r"held-out-(.+)\.npz$")


def summary(rankings: list[dict]) -> dict[str, tuple[int, float, float]]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for ranking in rankings:
        groups[SCORED_CATEGORIES[ranking["category"]]].append(ranking)
        groups["overall"].append(ranking)

    def mean_at(items: list[dict], k: int) -> float:
        return sum(evidence_recall(r["evidence"], r["ranked"], k) for r in items) / len(items)

    return {name: (len(items), mean_at(items, 5), mean_at(items, 10)) for name, items in groups.items()}


def held_out_rankings(corpus: dict, maps: Path | None = None) -> tuple[list[dict], list[dict]]:
    """The ``off`` variant's rankings and, question by question, its conversation's held-out map's
    (of the maps in ``maps`` only, when one result holds several sets)."""
    names = [name for name, _ in load(data_root() / corpus["corpus"])]
    counts = {name: sum(1 for _ in questions(name, data)) for name, data in load(data_root() / corpus["corpus"])}
    by_conversation, off = {}, None
    for variant in corpus["variants"]:
        choice = variant["settings"].get("RECALL_QUERY_ADAPTER", "")
        if choice == "off":
            off = variant["rankings"]
        elif (match := HELD_OUT.search(choice)) and (maps is None or Path(choice).parent == maps):
            by_conversation[match.group(1)] = variant["rankings"]
    missing = [n for n in names if n not in by_conversation]
    if off is None or missing:
        raise SystemExit(f"{corpus['corpus']}: needs an 'off' variant and a held-out map for every conversation (missing: {missing})")
    chosen, start = [], 0
    for name in names:
        chosen += by_conversation[name][start:start + counts[name]]
        start += counts[name]
    return off, chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.quality_held_out", description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="+", help="ops.bench.quality JSON kept with --keep-rankings")
    parser.add_argument("--maps", type=Path, help="only the held-out maps in this folder (a result with several sets)")
    args = parser.parse_args(argv)
    for path in args.results:
        for corpus in json.loads(path.read_text())["corpora"]:
            off, held_out = held_out_rankings(corpus, args.maps)
            before, after = summary(off), summary(held_out)
            print(f"\n## {corpus['corpus']}: recall@5 / recall@10, each conversation with the map fitted without it\n")
            print("| category | questions | adapter off | held-out adapter | change |")
            print("|---|---|---|---|---|")
            for name, (n, r5, r10) in before.items():
                _, h5, h10 = after[name]
                print(f"| {name} | {n} | {r5:.3f} / {r10:.3f} | {h5:.3f} / {h10:.3f} | {h5 - r5:+.3f} / {h10 - r10:+.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
