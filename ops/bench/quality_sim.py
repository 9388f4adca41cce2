"""Screen ranking ideas offline: dump each LoCoMo question's scored pool once, re-rank it many times.

    python -m ops.bench.quality_sim dump --url http://127.0.0.1:PORT --token T --limit 50 --out /tmp/pool.json
    python -m ops.bench.quality_sim replay /tmp/pool.json --set neighbour=0.1 --set time_mention=0.1 --set keyword=0.15

``dump`` recalls every scored question (as ``ops.bench.quality`` does, scoped to its
conversation) with a large ``limit`` and keeps each result's ``score_components``, content,
session and ``dia_id``. ``replay`` recomputes every result's score from those components with
the given weights (the spec's defaults otherwise, plus ``lexical``, ``neighbour``, ``neighbour_far``,
``time_mention``, ``date_match`` and ``asks``), re-orders, and prints recall@5 / recall@10 per category and MRR: seconds per
variant instead of a web restart and 786 recalls.

What it can and cannot tell: the pool is the one a recall with ``--limit`` builds (larger than
``limit=10``'s), so figures differ from ``bench_quality``'s by ~0.005; a keyword pool member
that a ``limit=10`` recall would not have fetched can appear. Adjacent turns are read from
``dia_id`` (the engine reads ``PRECEDED_BY``; in LoCoMo they agree within a session). Use it to
choose what to measure with ``bench_quality --variant``, never as the figure itself.
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import orjson

from ops.bench.quality import DEFAULT_DATA
from ops.bench.locomo import SCORED_CATEGORIES, conversation_tag, evidence_recall, load, questions
from pipeline.config import RecallProfile
from pipeline.query.asks import question_share
from pipeline.query.scoring import WEIGHTED_COMPONENTS
from pipeline.query.filters import parse_epoch
from pipeline.query.when import asks_when, in_periods, named_periods, states_time

_DIA = re.compile(r"D(\d+):(\d+)")


def dump(url: str, token: str | None, limit: int, params: dict[str, str], data: Path | None = None,
         conversations: list[tuple[str, dict]] | None = None) -> list[dict]:
    """Every scored question of ``data`` (or of ``conversations``, already loaded) with its pool."""
    loaded = conversations if conversations is not None else load(data)
    qs = [q for name, conversation in loaded for q in questions(name, conversation)]
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=url, headers=headers, timeout=120) as api:
        def one(question) -> dict:
            response = api.get("/recall", params={"query": question.text, "tags": conversation_tag(question.conversation),
                                                  "limit": limit, **params})
            response.raise_for_status()
            results = [{
                "dia": r["memory"].get("metadata", {}).get("dia_id"),
                "content": r["memory"].get("content") or "",
                "timestamp": r["memory"].get("timestamp"),
                "components": {k: v for k, v in r["score_components"].items()
                               if isinstance(v, (int, float)) and not isinstance(v, bool)},
            } for r in response.json()["results"]]
            return {"query": question.text, "category": question.category, "evidence": list(question.evidence),
                    "results": results}

        with ThreadPoolExecutor(2) as pool:
            return list(pool.map(one, qs))


def dump_own_stack(limit: int, params: dict[str, str], data: Path) -> list[dict]:
    """``dump`` against a fresh stack of its own, ``data`` ingested as ``ops.bench.quality`` does."""
    import tempfile

    from ops.bench.quality import ingest, wait_indexed, wait_settled
    from ops.bench.real import shipped_env
    from ops.bench.stack import API_TOKEN, Servers, Stack
    from pipeline.config import Settings

    servers = Servers.start(Path(tempfile.mkdtemp(prefix="mempipe-sim-")))
    stack = Stack.create(servers, **shipped_env())
    try:
        stack.start_web(timeout=300)
        stack.start_worker(threads=Settings.model_fields["worker_threads"].default)
        stack.start_enrich_worker()
        with stack.client(timeout=300) as api:
            count = ingest(api, load(data))
            wait_indexed(api, count)
            wait_settled(api)
        return dump(stack.url, API_TOKEN, limit, params, data)
    finally:
        stack.stop()
        servers.stop()


def _adjacent(dia: str | None, steps: int = 1) -> list[str]:
    match = _DIA.fullmatch(dia or "")
    if not match:
        return []
    session, turn = int(match.group(1)), int(match.group(2))
    return [f"D{session}:{turn - steps}", f"D{session}:{turn + steps}"]


def rank(question: dict, weights: dict[str, float]) -> list[str]:
    """The dumped pool re-scored with ``weights``: the hybrid sum, time_mention, date_match, less asks,
    then the neighbour bonus (asks and date_match from content and timestamp: any dump can replay them)."""
    results = question["results"]
    scores = []
    when = asks_when(question["query"])
    periods = named_periods(question["query"]) if weights.get("date_match") else ()
    for result in results:
        c = result["components"]
        score = sum(weights[name] * c.get(name, 0.0) for name in WEIGHTED_COMPONENTS)
        score += c.get("context", 0.0) + weights["lexical"] * c.get("lexical", 0.0)
        if when:
            score += weights["time_mention"] * (1.0 if states_time(result["content"]) else 0.0)
        if periods and in_periods(parse_epoch(result.get("timestamp")), periods):
            score += weights.get("date_match", 0.0)
        score -= weights.get("asks", 0.0) * question_share(result["content"])
        scores.append(score)
    by_dia = {r["dia"]: s for r, s in zip(results, scores)}
    def best(dia: str | None, steps: int) -> float:
        return max([by_dia[d] for d in _adjacent(dia, steps) if d in by_dia] or [0.0])

    final = [s + weights["neighbour"] * best(r["dia"], 1) + weights.get("neighbour_far", 0.0) * best(r["dia"], 2)
             for r, s in zip(results, scores)]
    order = sorted(range(len(results)), key=lambda i: -final[i])
    return [results[i]["dia"] for i in order]


def replay(pools: list[dict], weights: dict[str, float]) -> dict[str, tuple[float, float, float]]:
    """recall@5, recall@10, MRR per category and overall."""
    measured: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for question in pools:
        ranked = rank(question, weights)
        evidence = set(question["evidence"])
        first = next((k for k, dia in enumerate(ranked, 1) if dia in evidence), None)
        row = (evidence_recall(question["evidence"], ranked, 5), evidence_recall(question["evidence"], ranked, 10),
               1 / first if first else 0.0)
        measured[SCORED_CATEGORIES[question["category"]]].append(row)
        measured["overall"].append(row)
    return {name: tuple(sum(r[i] for r in rows) / len(rows) for i in range(3)) for name, rows in measured.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    take = commands.add_parser("dump")
    take.add_argument("--url", help="a running mempipe; default: start a stack (shipped settings, local model), ingest --data, dump, stop")
    take.add_argument("--token")
    take.add_argument("--limit", type=int, default=50)
    take.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="extra /recall parameter")
    take.add_argument("--data", type=Path, default=DEFAULT_DATA)
    take.add_argument("--out", type=Path, required=True)
    again = commands.add_parser("replay")
    again.add_argument("pools", type=Path)
    again.add_argument("--set", action="append", default=[], metavar="COMPONENT=WEIGHT",
                       help="a weight (vector, keyword, tag, …, lexical, neighbour, neighbour_far, time_mention, date_match, asks); repeatable")
    args = parser.parse_args(argv)

    if args.command == "dump":
        params = dict(p.split("=", 1) for p in args.param)
        if args.url:
            pools = dump(args.url, args.token, args.limit, params, args.data)
        else:
            pools = dump_own_stack(args.limit, params, args.data)
        args.out.write_bytes(orjson.dumps(pools))
        print(f"{len(pools)} questions, up to {args.limit} results each → {args.out}")
        return 0
    # the replay's baseline: the automem profile plus the pool's BM25 (--set changes any weight)
    weights = {**RecallProfile.AUTOMEM.weights.model_dump(), "lexical": 0.1}
    weights.update({name: float(value) for name, value in (item.split("=", 1) for item in args.set)})
    figures = replay(orjson.loads(args.pools.read_bytes()), weights)
    names = [n for n in SCORED_CATEGORIES.values() if n in figures] + ["overall"]
    print("| " + " | ".join(names) + " | MRR |")
    print("|---" * (len(names) + 1) + "|")
    print("| " + " | ".join(f"{figures[n][0]:.3f} / {figures[n][1]:.3f}" for n in names)
          + f" | {figures['overall'][2]:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
