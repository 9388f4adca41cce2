"""Retrieval quality on LoCoMo: evidence recall@k, hit@5 and MRR, per category and overall.

Every turn is written through the public API, every scored question (categories 1–4) is
recalled through ``GET /recall`` scoped to its conversation; no LLM anywhere. Deterministic:
same data, same model, same figures.

    python -m ops.bench.quality                      # starts its own stack (local MiniLM)
    python -m ops.bench.quality --url http://127.0.0.1:8001 --token …   # against a running service
    python -m ops.bench.quality --data DIR --limit-conversations 2

Prints a table and writes ops/bench/results/bench_quality.json.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import orjson

from ops.bench.locomo import SCORED_CATEGORIES, Question, conversation_tag, load, questions, turns

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo-dev"
KS = (1, 5, 10)


BATCH = 200


def ingest(api: httpx.Client, conversations: list[tuple[str, dict]]) -> int:
    """Each conversation's turns in order, in batches, as a chat import sends them.

    A session's turns share one timestamp; the order of a batch (and of batches sent one after
    another) is what tells the engine which turn follows which. Conversations go in parallel.
    """
    def send(bodies: list[dict]) -> int:
        for start in range(0, len(bodies), BATCH):
            while True:
                response = api.post("/memory/batch", json={"memories": bodies[start:start + BATCH]})
                if response.status_code != 429:  # backpressure: wait as a client should
                    break
                time.sleep(float(response.headers.get("Retry-After") or 1))
            response.raise_for_status()
        return len(bodies)

    with ThreadPoolExecutor(4) as pool:
        return sum(pool.map(send, [list(turns(name, data)) for name, data in conversations]))


def wait_settled(api: httpx.Client, timeout: float = 1800) -> None:
    """Until every pipeline queue (enrichment included: it writes PRECEDED_BY) is empty."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        queues = api.get("/health").json().get("queues") or {}
        if not any(queues.values()):
            return
        time.sleep(1)
    raise TimeoutError(f"queues not drained after {timeout}s: {queues}")


def wait_indexed(api: httpx.Client, expected: int, timeout: float = 1800) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        health = api.get("/health").json()
        if (health.get("vector_count") or 0) >= expected and (health.get("memory_count") or 0) >= expected:
            return
        time.sleep(1)
    raise TimeoutError(f"{expected} memories not indexed after {timeout}s")


def score_question(api: httpx.Client, question: Question, k_max: int, params: dict[str, str] | None = None) -> dict:
    response = api.get("/recall", params={"query": question.text, "tags": conversation_tag(question.conversation),
                                          "limit": k_max, **(params or {})})
    response.raise_for_status()
    ranked = [r["memory"].get("metadata", {}).get("dia_id") for r in response.json()["results"]]
    evidence = set(question.evidence)
    first_hit = next((rank for rank, dia in enumerate(ranked, 1) if dia in evidence), None)
    scores = {f"recall@{k}": len(evidence & set(ranked[:k])) / len(evidence) for k in KS}
    scores["hit@5"] = 1.0 if first_hit and first_hit <= 5 else 0.0
    scores["mrr"] = 1.0 / first_hit if first_hit else 0.0
    return scores


def aggregate(rows: list[tuple[int, dict]]) -> dict:
    by_category: dict[str, list[dict]] = defaultdict(list)
    for category, scores in rows:
        by_category[SCORED_CATEGORIES[category]].append(scores)
        by_category["overall"].append(scores)
    return {
        name: {"questions": len(items), **{m: round(sum(s[m] for s in items) / len(items), 4) for m in items[0]}}
        for name, items in by_category.items()
    }


def table(summary: dict) -> str:
    metrics = [f"recall@{k}" for k in KS] + ["hit@5", "mrr"]
    lines = ["| category | questions | " + " | ".join(metrics) + " |", "|---" * (len(metrics) + 2) + "|"]
    order = [c for c in SCORED_CATEGORIES.values() if c in summary] + ["overall"]
    for name in order:
        row = summary[name]
        lines.append(f"| {name} | {row['questions']} | " + " | ".join(f"{row[m]:.3f}" for m in metrics) + " |")
    return "\n".join(lines)


def load_all(api: httpx.Client, conversations: list[tuple[str, dict]]) -> dict:
    started = time.perf_counter()
    count = ingest(api, conversations)
    wait_indexed(api, count)
    wait_settled(api)
    return {"memories": count, "ingest_seconds": round(time.perf_counter() - started, 1)}


def recall_all(api: httpx.Client, conversations: list[tuple[str, dict]], params: dict[str, str] | None = None) -> dict:
    qs = [q for name, data in conversations for q in questions(name, data)]
    started = time.perf_counter()
    rows = [(q.category, score_question(api, q, max(KS), params)) for q in qs]
    recall_s = time.perf_counter() - started
    return {
        "questions": len(qs),
        "recall_seconds": round(recall_s, 1),
        "mean_recall_ms": round(recall_s / max(1, len(qs)) * 1000, 1),
        "summary": aggregate(rows),
    }


def run(api: httpx.Client, conversations: list[tuple[str, dict]], params: dict[str, str] | None = None) -> dict:
    return {**load_all(api, conversations), **recall_all(api, conversations, params)}


def comparison(variants: list[dict]) -> str:
    """One line per variant: recall@5 / recall@10 per category and overall, MRR."""
    names = [c for c in SCORED_CATEGORIES.values()] + ["overall"]
    lines = ["| settings | " + " | ".join(names) + " | MRR | mean recall |", "|---" * (len(names) + 3) + "|"]
    for variant in variants:
        summary = variant["summary"]
        cells = [f"{summary[n]['recall@5']:.3f} / {summary[n]['recall@10']:.3f}" if n in summary else "-" for n in names]
        label = " ".join(f"{k}={v}" for k, v in variant["settings"].items()) or "(defaults)"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {summary['overall']['mrr']:.3f} | {variant['mean_recall_ms']} ms |")
    return "\n".join(lines)


def _settings(items: list[str]) -> dict[str, str]:
    return dict(item.split("=", 1) for item in items)


def _split_variant(items: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """A variant's settings (upper-case names, environment) and recall parameters (lower-case names)."""
    pairs = _settings(items)
    return ({k: v for k, v in pairs.items() if not k.islower()}, {k: v for k, v in pairs.items() if k.islower()})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--url", help="a running mempipe; default: start an embedded stack")
    parser.add_argument("--token", help="API token for --url")
    parser.add_argument("--provider", default="local", choices=("local", "hash"))
    parser.add_argument("--limit-conversations", type=int)
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting for the stack this command starts (repeatable), e.g. RECALL_KEYWORD_SEARCH=always")
    parser.add_argument("--variant", action="append", default=[], metavar="'NAME=VALUE …'",
                        help="after the run, restart only the web process with these settings (on top of --env) and "
                             "recall again over the same ingest (repeatable); prints one comparison table. "
                             "Lower-case names are recall parameters instead, e.g. 'auto_decompose=true'")
    parser.add_argument("--recall-param", action="append", default=[], metavar="NAME=VALUE",
                        help="a /recall query parameter added to every recall of the first run (repeatable), "
                             "e.g. auto_decompose=true")
    args = parser.parse_args(argv)
    conversations = load(args.data)[: args.limit_conversations]
    params = _settings(args.recall_param)

    if args.url:
        headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
        with httpx.Client(base_url=args.url, headers=headers, timeout=120) as api:
            report = run(api, conversations, params)
    else:
        from ops.bench.stack import Servers, Stack

        servers = Servers.start(Path(tempfile.mkdtemp(prefix="mempipe-quality-")))
        overrides = _settings(args.env)
        stack = Stack.create(servers, EMBEDDING_PROVIDER=args.provider, **overrides)
        try:
            stack.start_web(timeout=300)
            stack.start_worker(threads=2)
            stack.start_enrich_worker()  # as ops.serve runs it: tags entities, chains scopes
            with stack.client(timeout=120) as api:
                report = run(api, conversations, params)
            report["variants"] = []
            base_env = dict(stack.extra_env)
            for variant in args.variant:
                settings, variant_params = _split_variant(variant.split())
                stack.web.terminate()
                stack.web.wait(30)
                stack.extra_env = {**base_env, **settings}
                stack.start_web(timeout=300)
                with stack.client(timeout=120) as api:
                    report["variants"].append({"settings": {**settings, **variant_params},
                                               **recall_all(api, conversations, variant_params)})
                print(comparison([report["variants"][-1]]).splitlines()[-1], flush=True)  # a long run shows progress
        finally:
            stack.stop()
            servers.stop()

    report["provider"] = args.provider
    report["settings"] = {**_settings(args.env), **params}
    report["conversations"] = [name for name, _ in conversations]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_quality.json").write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    print(table(report["summary"]))
    print(f"\n{report['memories']} memories, {report['questions']} questions; ingest {report['ingest_seconds']} s, "
          f"mean recall {report['mean_recall_ms']} ms ({args.provider} provider)")
    if report.get("variants"):
        print("\nrecall@5 / recall@10 over the same ingest:\n")
        print(comparison([{"settings": {}, **report}] + report["variants"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
