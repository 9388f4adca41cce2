"""Retrieval quality on two conversation corpora: evidence recall@k, hit@5 and MRR, with its cost.

``locomo-dev`` (conversations an LLM wrote) and ``realtalk-dev`` (real people's chats) are each
ingested into a fresh store of their own, the way a user would: the shipped settings, the local
model, the conversation's turns through ``POST /memory/batch`` in order. Every scored question
(categories 1-4) is recalled through ``GET /recall`` scoped to its conversation, one at a time;
no LLM anywhere. Quality figures are deterministic (same code, data and model: same figures);
timings are not.

Two passes per corpus:

- **after write**: as soon as every turn is recallable (in the graph and the vector index:
  what a single write's default ``wait`` answers), before enrichment has run (the enrichment
  worker starts after this pass: no ``PRECEDED_BY`` chains, no entities yet) and while
  SIMILAR_TO may still be catching up. The worst case a user meets right after an import.
- **idle**: after the enrichment worker has run and every queue is empty.

Cost, per stored memory: texts the model embeds (labelled sentences count one each), worker
CPU (write path + enrichment) and web CPU from the first write until idle; recall latency
p50/p95 (client side, one recall at a time) of the idle pass.

    python -m ops.bench.quality                                   # both corpora
    python -m ops.bench.quality --corpora realtalk-dev --variant 'SEARCH_WEIGHT_NEIGHBOUR=0'
    python -m ops.bench.quality --url http://127.0.0.1:8001 --token … --corpora locomo-dev

``--variant 'NAME=VALUE …'`` restarts only the web process with those settings and recalls
again over the same ingest (lower-case names are recall parameters). Settings read at write
time (embedding) need ``--env`` and a run of their own. Prints one table per corpus and writes
``ops/bench/results/bench_quality.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import orjson
import redis
from dramatiq.common import dq_name

from ops.bench.suite import machine
from ops.bench.locomo import SCORED_CATEGORIES, Question, conversation_tag, evidence_recall, load, questions, turns
from pipeline.broker import held_messages_key

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[2]
KS = (1, 5, 10)
BATCH = 200
CORPORA = ("locomo-dev", "realtalk-dev")
BACKGROUND_QUEUES = ("enrich", "similarity")


def data_root() -> Path:
    """``shared/data`` beside the checkout (or a worktree's main checkout)."""
    for parent in ROOT.parents:
        if (parent / "shared" / "data").is_dir():
            return parent / "shared" / "data"
    return ROOT.parent / "shared" / "data"


DEFAULT_DATA = data_root() / "locomo-dev"


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
        time.sleep(0.5)
    raise TimeoutError(f"{expected} memories not indexed after {timeout}s")


def score_question(api: httpx.Client, question: Question, k_max: int, params: dict[str, str] | None = None) -> dict:
    started = time.perf_counter()
    response = api.get("/recall", params={"query": question.text, "tags": conversation_tag(question.conversation),
                                          "limit": k_max, **(params or {})})
    elapsed_ms = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    ranked = [r["memory"].get("metadata", {}).get("dia_id") for r in response.json()["results"]]
    evidence = set(question.evidence)
    first_hit = next((rank for rank, dia in enumerate(ranked, 1) if dia in evidence), None)
    scores = {f"recall@{k}": evidence_recall(question.evidence, ranked, k) for k in KS}
    scores["hit@5"] = 1.0 if first_hit and first_hit <= 5 else 0.0
    scores["mrr"] = 1.0 / first_hit if first_hit else 0.0
    scores["_ms"] = elapsed_ms
    scores["_ranked"] = ranked
    return scores


def aggregate(rows: list[tuple[int, dict]]) -> dict:
    by_category: dict[str, list[dict]] = defaultdict(list)
    for category, scores in rows:
        by_category[SCORED_CATEGORIES[category]].append(scores)
        by_category["overall"].append(scores)
    metrics = [m for m in rows[0][1] if not m.startswith("_")] if rows else []
    return {
        name: {"questions": len(items), **{m: round(sum(s[m] for s in items) / len(items), 4) for m in metrics}}
        for name, items in by_category.items()
    }


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 1) if ordered else 0.0


KEEP_RANKINGS = False  # --keep-rankings: each pass also lists every question's top ten (dia ids), to diff variants


def recall_all(api: httpx.Client, conversations: list[tuple[str, dict]], params: dict[str, str] | None = None) -> dict:
    qs = [q for name, data in conversations for q in questions(name, data)]
    load_before = round(os.getloadavg()[0], 1)
    started = time.perf_counter()
    rows = [(q.category, score_question(api, q, max(KS), params)) for q in qs]
    recall_s = time.perf_counter() - started
    latencies = [scores["_ms"] for _, scores in rows]
    return {
        "questions": len(qs),
        "recall_seconds": round(recall_s, 1),
        "mean_recall_ms": round(statistics.fmean(latencies), 1) if latencies else 0.0,
        "recall_p50_ms": _percentile(latencies, 0.5),
        "recall_p95_ms": _percentile(latencies, 0.95),
        "load_average": [load_before, round(os.getloadavg()[0], 1)],  # the machine is shared: read timings with it
        "summary": aggregate(rows),
        **({"rankings": [{"query": q.text, "category": q.category, "evidence": list(q.evidence),
                          "ranked": scores["_ranked"]} for q, (_, scores) in zip(qs, rows)]} if KEEP_RANKINGS else {}),
    }


def embedded_texts(conversations: list[tuple[str, dict]], labelled: bool) -> dict:
    """Texts the model embeds for these turns (what the embed stage sends; no model needed)."""
    from pipeline.labelled import labelled_sentences

    contents = [body["content"] for name, data in conversations for body in turns(name, data)]
    pieces = [len(labelled_sentences(c) or [c]) if labelled else 1 for c in contents]
    return {"memories": len(contents), "texts": sum(pieces),
            "texts_per_memory": round(sum(pieces) / max(1, len(contents)), 3)}


def table(summary: dict) -> str:
    metrics = [f"recall@{k}" for k in KS] + ["hit@5", "mrr"]
    lines = ["| category | questions | " + " | ".join(metrics) + " |", "|---" * (len(metrics) + 2) + "|"]
    order = [c for c in SCORED_CATEGORIES.values() if c in summary] + ["overall"]
    for name in order:
        row = summary[name]
        lines.append(f"| {name} | {row['questions']} | " + " | ".join(f"{row[m]:.3f}" for m in metrics) + " |")
    return "\n".join(lines)


def comparison(variants: list[dict]) -> str:
    """One line per variant: recall@5 / recall@10 per category and overall, MRR, latency."""
    names = [c for c in SCORED_CATEGORIES.values()] + ["overall"]
    lines = ["| settings | " + " | ".join(names) + " | MRR | recall p50 / p95 |", "|---" * (len(names) + 3) + "|"]
    for variant in variants:
        summary = variant["summary"]
        cells = [f"{summary[n]['recall@5']:.3f} / {summary[n]['recall@10']:.3f}" if n in summary else "-" for n in names]
        label = variant.get("label") or " ".join(f"{k}={v}" for k, v in variant["settings"].items()) or "(defaults)"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {summary['overall']['mrr']:.3f} | "
                     f"{variant.get('recall_p50_ms', '-')} / {variant.get('recall_p95_ms', '-')} ms |")
    return "\n".join(lines)


def _settings(items: list[str]) -> dict[str, str]:
    return dict(item.split("=", 1) for item in items)


def _split_variant(items: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """A variant's settings (upper-case names, environment) and recall parameters (lower-case names)."""
    pairs = _settings(items)
    return ({k: v for k, v in pairs.items() if not k.islower()}, {k: v for k, v in pairs.items() if k.islower()})


def _background_backlog(stack) -> dict[str, int]:
    broker = redis.Redis.from_url(stack.redis_url)
    return {q: sum(broker.hlen(held_messages_key(name)) for name in (q, dq_name(q))) for q in BACKGROUND_QUEUES}


def bench_corpus(servers, corpus: str, conversations: list[tuple[str, dict]], overrides: dict[str, str],
                 params: dict[str, str], variants: list[str], after_write: bool, dump_pools: Path | None = None) -> dict:
    """One corpus on a fresh stack: ingest, the after-write pass, idle, the idle pass, variants.

    With ``dump_pools``, the idle store's pools (limit 50, ``ops.bench.quality_sim dump``) are also
    written to ``<dump_pools>-<corpus>.json`` for offline replays, without an ingest of their own."""
    from ops.bench.ingest import CpuMeter
    from ops.bench.real import shipped_env
    from ops.bench.stack import Stack, discard_data
    from pipeline.config import Settings

    env = {**shipped_env(), **overrides}
    stack = Stack.create(servers, **env)
    labelled = env.get("EMBED_LABELLED_SENTENCES", "true").lower() in ("1", "true", "yes", "on")
    report: dict = {"corpus": corpus, "conversations": [n for n, _ in conversations],
                    "embedded": embedded_texts(conversations, labelled)}
    try:
        stack.start_web(timeout=300)
        processes = Settings(**overrides).resolved_embedded_worker_processes  # as make run starts them
        stack.start_worker(processes=processes, threads=Settings.model_fields["worker_threads"].default,
                           queues=["persist", "embed", "maintenance"])
        if not after_write:
            stack.start_enrich_worker()
        with stack.client(timeout=300) as api:
            api.get("/recall", params={"query": "warm up", "limit": 1}).raise_for_status()  # model loaded in the web
            meter = CpuMeter(stack, servers)
            started = time.perf_counter()
            count = ingest(api, conversations)
            wait_indexed(api, count)
            report["memories"] = count
            report["recallable_seconds"] = round(time.perf_counter() - started, 1)
            if after_write:
                backlog = _background_backlog(stack)
                report["after_write"] = {**recall_all(api, conversations, params), "background_backlog": backlog}
                meter_before_enrich = meter.per_memory_ms(count)
                stack.start_enrich_worker()
                report["cpu_ms_per_memory_write_path"] = meter_before_enrich
            wait_settled(api)
            report["idle_seconds"] = round(time.perf_counter() - started, 1)
            cpu = meter.per_memory_ms(count)
            report["cpu_ms_per_memory"] = cpu
            report["idle"] = recall_all(api, conversations, params)
        if dump_pools is not None:
            from ops.bench.quality_sim import dump
            from ops.bench.stack import API_TOKEN

            target = dump_pools.with_name(f"{dump_pools.name}-{corpus}.json")
            target.write_bytes(orjson.dumps(dump(stack.url, API_TOKEN, 50, params, conversations=conversations)))
            print(f"{corpus}: pools → {target}", flush=True)
        report["variants"] = []
        base_env = dict(stack.extra_env)
        for variant in variants:
            settings, variant_params = _split_variant(variant.split())
            stack.web.terminate()
            stack.web.wait(30)
            stack.extra_env = {**base_env, **settings}
            stack.start_web(timeout=300)
            with stack.client(timeout=300) as api:
                api.get("/recall", params={"query": "warm up", "limit": 1}).raise_for_status()
                report["variants"].append({"settings": {**settings, **variant_params},
                                           **recall_all(api, conversations, {**params, **variant_params})})
            print(f"{corpus}: " + comparison([report["variants"][-1]]).splitlines()[-1], flush=True)
    finally:
        stack.stop()
        discard_data(stack)
    return report


def render(report: dict) -> str:
    out = []
    for corpus in report["corpora"]:
        idle = corpus["idle"]
        out.append(f"\n## {corpus['corpus']} ({corpus['memories']} memories, {idle['questions']} questions)\n")
        out.append(table(idle["summary"]))
        emb, cpu = corpus["embedded"], corpus.get("cpu_ms_per_memory", {})
        out.append(f"\ncost: {emb['texts_per_memory']} embedded texts/memory; CPU ms/memory workers "
                   f"{cpu.get('workers', '-')}, web {cpu.get('web', '-')}, total {cpu.get('total', '-')}; "
                   f"recallable after {corpus['recallable_seconds']} s, idle after {corpus['idle_seconds']} s; "
                   f"recall p50 {idle['recall_p50_ms']} ms, p95 {idle['recall_p95_ms']} ms")
        rows = []
        if "after_write" in corpus:
            rows.append({**corpus["after_write"], "label": "after write (before enrichment)", "settings": {}})
        rows.append({**idle, "label": "idle (defaults)", "settings": {}})
        rows += corpus.get("variants", [])
        out.append("\nrecall@5 / recall@10:\n")
        out.append(comparison(rows))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", default=",".join(CORPORA),
                        help="comma list of folders under shared/data (LoCoMo layout); default: both")
    parser.add_argument("--data", type=Path, help="one corpus folder instead of --corpora")
    parser.add_argument("--url", help="a running mempipe (one corpus, no after-write pass); default: start a stack per corpus")
    parser.add_argument("--token", help="API token for --url")
    parser.add_argument("--limit-conversations", type=int)
    parser.add_argument("--no-after-write", action="store_true", help="skip the after-write pass")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting for the stacks this command starts (repeatable), e.g. EMBED_LABELLED_SENTENCES=false")
    parser.add_argument("--variant", action="append", default=[], metavar="'NAME=VALUE …'",
                        help="after the idle pass, restart only the web process with these settings (on top of --env) "
                             "and recall again over the same ingest (repeatable). Lower-case names are recall parameters")
    parser.add_argument("--recall-param", action="append", default=[], metavar="NAME=VALUE",
                        help="a /recall query parameter added to every recall (repeatable)")
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_quality.json")
    parser.add_argument("--keep-rankings", action="store_true",
                        help="keep every question's top ten (dia ids) per pass and variant in the JSON, to diff them")
    parser.add_argument("--dump-pools", type=Path, metavar="PREFIX",
                        help="also dump each corpus's idle pools (limit 50) to PREFIX-<corpus>.json for quality_sim replay")
    args = parser.parse_args(argv)
    global KEEP_RANKINGS
    KEEP_RANKINGS = args.keep_rankings
    folders = [args.data] if args.data else [data_root() / name for name in args.corpora.split(",") if name]
    params = _settings(args.recall_param)
    report: dict = {"settings": {**_settings(args.env), **params}, "variants": args.variant, "corpora": [],
                    "load_before": round(os.getloadavg()[0], 1), **machine.commit(), "date": machine.now_iso()}

    if args.url:
        headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
        conversations = load(folders[0])[: args.limit_conversations]
        with httpx.Client(base_url=args.url, headers=headers, timeout=120) as api:
            started = time.perf_counter()
            count = ingest(api, conversations)
            wait_indexed(api, count)
            wait_settled(api)
            report["corpora"].append({"corpus": folders[0].name, "memories": count, "recallable_seconds": None,
                                      "idle_seconds": round(time.perf_counter() - started, 1),
                                      "embedded": embedded_texts(conversations, True),
                                      "idle": recall_all(api, conversations, params)})
    else:
        from ops.bench.stack import Servers

        servers = Servers.start(Path(tempfile.mkdtemp(prefix="mempipe-quality-")))
        try:
            for folder in folders:
                conversations = load(folder)[: args.limit_conversations]
                report["corpora"].append(bench_corpus(servers, folder.name, conversations, _settings(args.env), params,
                                                      args.variant, not args.no_after_write, args.dump_pools))
                print(render({"corpora": report["corpora"][-1:]}), flush=True)
        finally:
            servers.stop()

    report["load_after"] = round(os.getloadavg()[0], 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    if args.url:
        print(render(report))
    print(f"\n→ {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
