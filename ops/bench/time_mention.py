"""CPU cost of the time_mention stage: hybrid scoring of real pools with it on and off.

    python -m ops.bench.time_mention [--pool 100] [--rounds 5]

Every LoCoMo question (the when-questions, where the stage runs, and the others, where it
costs one regular expression over the query) is scored against a pool of ``--pool`` turns of
its conversation through ``QuerySearch.score``, as a recall scores its candidates, with
``SEARCH_WEIGHT_TIME_MENTION`` 0 and 0.1 in alternation (so load shifts hit both alike); "on, cold"
empties the stage's per-content cache first, "on, warm" keeps it from the previous round.
Process CPU time, not wall time: the dev machine is shared. Prints a table and writes
ops/bench/results/bench_time_mention.json.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path

import orjson

from ops.bench.quality import DEFAULT_DATA
from ops.bench.locomo import load, questions, turns
from pipeline.config import Settings
from pipeline.graph import Scope
from pipeline.query.candidates import Candidate
from pipeline.query.context import ContextProfile
from pipeline.query.keywords import extract_keywords
from pipeline.query.request import ContextHints
from pipeline.query.search import QuerySearch, SearchContext, SearchPolicy
from pipeline.query.when import asks_when, states_time

RESULTS = Path(__file__).resolve().parent / "results"


def searcher(weight: float) -> QuerySearch:
    settings = Settings(recall_profile="automem", search_weight_time_mention=weight, recall_metadata_search_enabled=False)
    return QuerySearch(None, SearchPolicy.from_settings(settings))


def cpu_ms_per_query(search: QuerySearch, cases: list[tuple[str, list[dict]]], cold: bool = False) -> float:
    if cold:  # every content read afresh, as for memories no recall has seen yet
        states_time.cache_clear()
    ctx = SearchContext(Scope(), ContextProfile.build(ContextHints(), Settings().context_bonuses), datetime.now(timezone.utc), False)
    started = time.process_time()
    for query, memories in cases:
        pool = [Candidate(m, "vector", "qdrant", vector=0.5) for m in memories]
        search.score(pool, ctx, query, extract_keywords(query), gate=False, lexical=True)
    return (time.process_time() - started) * 1000 / len(cases)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--pool", type=int, default=100, help="candidates scored per question")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    rng = random.Random(7)
    groups: dict[str, list[tuple[str, list[dict]]]] = {"when-questions": [], "other questions": []}
    for name, data in load(args.data):
        memories = [{**body, "id": body["id"]} for body in turns(name, data)]
        for question in questions(name, data):
            case = (question.text, rng.sample(memories, min(args.pool, len(memories))))
            groups["when-questions" if asks_when(question.text) else "other questions"].append(case)
    off, on = searcher(0.0), searcher(0.1)
    load_before = os.getloadavg()[0]
    report: dict[str, dict] = {}
    for group, cases in groups.items():
        timings: dict[str, list[float]] = {"off": [], "cold": [], "warm": []}
        for _ in range(args.rounds):  # alternate, so load changes hit all three
            timings["off"].append(cpu_ms_per_query(off, cases))
            timings["cold"].append(cpu_ms_per_query(on, cases, cold=True))
            timings["warm"].append(cpu_ms_per_query(on, cases))
        report[group] = {"questions": len(cases), **{k: round(statistics.median(v), 4) for k, v in timings.items()}}
    report["load_average"] = [round(load_before, 1), round(os.getloadavg()[0], 1)]
    report["pool"] = args.pool
    print(f"CPU ms per query to score a pool of {args.pool} (median of {args.rounds} rounds; "
          f"load average {report['load_average'][0]} → {report['load_average'][1]})")
    print("| questions | count | off | on, cold | on, warm | cold ÷ off | warm ÷ off |")
    print("|---|---|---|---|---|---|---|")
    for group in groups:
        row = report[group]
        print(f"| {group} | {row['questions']} | {row['off']:.3f} | {row['cold']:.3f} | {row['warm']:.3f} "
              f"| {row['cold'] / row['off']:.2f}× | {row['warm'] / row['off']:.2f}× |")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_time_mention.json").write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
