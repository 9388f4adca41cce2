"""Ingestion as a user meets it: real text, the local model, the shipped defaults.

    python -m ops.bench.real [--exports r-contributors,houstondatavis] [--turns 1500] [--clients 8,4]

Sources are the dev data in ``shared/data``: the real Slack exports of ``slack-dev`` and the
conversation turns of ``locomo-dev`` and ``realtalk-dev`` (stored as ``ops.bench.quality``
stores them, ``"<speaker>: <text>"``). Each phase runs on a fresh stack (real redis-server +
FalkorDB, uvicorn owning Qdrant Edge, one worker process and the enrichment worker, as
``make run`` starts them) with the local model and the shipped settings: the test harness's
short heartbeat, retry and index-build intervals are put back to their defaults.

- **raw model**: the local model alone embedding the same texts (one per memory), with the
  workers' batch size and torch threads, in a process of its own, in the same run. Whatever
  the pipeline embeds per memory beyond one text (labelled sentences, chunks) counts against
  it: the ratio is memories per second through the pipeline over texts per second of the model.
- **slack import**: the export through ``ops.slack_import`` (``POST /memory/batch``), from the
  first request until every imported memory is in the graph and the vector index.
- **singles**: the turns through ``POST /memory`` with the default ``wait`` (each client waits
  for its 201) from N clients, until all are recallable.
- After each phase's last write: how long until enrichment and SIMILAR_TO have nothing left.

Prints one table and writes ``ops/bench/results/bench_real.json``. A 2-core machine shared with other
work is noisy: read the ratios, which are taken within one run.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import orjson
import redis
from dramatiq.common import dq_name

from ops.bench import locomo
from ops.bench.ingest import CpuMeter, _importer_with_rss, _wait_recallable
from ops.bench.model_alone import model_run_apart, model_run_arranged, model_run_in_processes
from pipeline.broker import any_held
from pipeline.config import Settings
from ops.bench.stack import AUTH, Servers, Stack, discard_data

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "ops" / "bench" / "results"
# What ops.bench.stack sets for fast tests, put back to what a user runs.
SHIPPED = ("HEARTBEAT_TIMEOUT_MS", "RETRY_MIN_BACKOFF_MS", "RETRY_MAX_BACKOFF_MS", "ACTOR_MAX_RETRIES",
           "EDGE_OPTIMIZE_INTERVAL_S")
BACKGROUND_QUEUES = ("enrich", "similarity")


def shipped_env() -> dict[str, str]:
    fields = Settings.model_fields
    return {name: str(fields[name.lower()].default) for name in SHIPPED} | {"EMBEDDING_PROVIDER": "local"}


def slack_texts(export: Path) -> list[str]:
    """The contents an import of ``export`` stores, one per memory, in the order it sends them.

    Mapped as ``ops.slack_import`` maps them (shipped noise rules, markup rendered, the
    content limit): the model's rate is taken on what the pipeline embeds, not on the raw
    ``text`` fields, which hold hundreds of short "has joined the channel" messages the import
    skips (they made the model's rate look faster than it is on the imported memories).
    """
    from pipeline.slack.export import SlackExport
    from pipeline.slack.importer import BatchOutcome, import_export
    from pipeline.slack.mapping import MappingRules

    contents: list[str] = []

    class Collect:
        def send(self, bodies: list[dict]) -> BatchOutcome:
            contents.extend(body["content"] for body in bodies)
            return BatchOutcome(accepted=len(bodies))

    settings = Settings()
    rules = MappingRules(noise_subtypes=settings.slack_noise_subtypes, content_max_chars=settings.memory_content_hard_limit)
    with SlackExport(export, settings.slack_export_max_member_bytes, settings.slack_export_max_total_bytes) as slack:
        import_export(slack, Collect(), rules)
    return contents


def conversation_turns(limit: int) -> list[dict]:
    """Turns of locomo-dev and realtalk-dev alternately by conversation, ``limit`` in all."""
    turns: list[dict] = []
    for corpus in ("realtalk-dev", "locomo-dev"):
        for name, data in locomo.load(DATA / corpus):
            turns += list(locomo.turns(f"{corpus}-{name}", data))
    return turns[:limit]


def raw_model_rate(texts: list[str], settings: Settings, sorted_within: int = 0) -> dict:
    """The model alone, in child processes (torch never loads into this one): one process with
    one torch thread, with the workers' count and with every usable core, as many one-thread
    processes side by side as there are cores, and one process whose calls are split between
    one-thread passes, one per core (``EMBED_MODEL_PASSES``); the fastest is the model's rate, the
    budget the pipeline is held to. Texts go in calls of the workers' batch size, in order.

    With ``sorted_within`` (an import's batch size) the fastest arrangement runs once more
    on the texts sorted by length within each run of that many, as the persist stage cuts its
    embed messages (``pipeline.embed_batches``): the model's own rate with the pipeline's
    grouping, beside the in-order rate the issue names. The pipeline's gain from grouping is
    the gap between the two; its own overhead is the gap to the sorted one.

    ``as_worker_calls`` is the model as the launcher's write path runs it
    (``model_as_workers_call_it``). It is not the budget — the ratios the issue names are to the
    model at its best — but the gap to it is what the pipeline itself costs, apart from how
    OpenMP waits."""
    cores = len(os.sched_getaffinity(0))
    runs = [model_run_apart(texts, settings, threads)
            for threads in sorted({settings.resolved_embed_torch_threads, 1, cores})]
    if cores > 1:
        runs.append(model_run_in_processes(texts, settings, cores))
        runs.append(model_run_apart(texts, settings, 1, passes=cores))
    best = max(runs, key=lambda run: run["rate"])
    result = {**best, "runs": runs, "as_worker_calls": model_as_workers_call_it(texts, settings)}
    if sorted_within:
        grouped = [t for start in range(0, len(texts), sorted_within) for t in sorted(texts[start:start + sorted_within], key=len)]
        result["length_sorted"] = model_run_arranged(grouped, settings, best.get("processes", 1), best["torch_threads"],
                                                     best.get("caller_threads", 0), best.get("model_passes", 1))
    return result


def model_as_workers_call_it(texts: list[str], settings: Settings) -> dict:
    """The model as the launcher's write-path workers run it: ``EMBEDDED_WORKER_PROCESSES``
    processes, the calls made by each one's ``WORKER_THREADS`` threads, each split between
    ``EMBED_MODEL_PASSES`` forward passes on ``EMBED_TORCH_THREADS`` threads each."""
    workers = settings.model_copy(update={"worker_processes": settings.resolved_embedded_worker_processes})
    return model_run_arranged(texts, settings, workers.worker_processes, workers.resolved_embed_torch_threads,
                              settings.worker_threads, workers.resolved_embed_model_passes)


def wait_background_done(stack: Stack, timeout: float) -> float:
    """Seconds until enrichment and SIMILAR_TO hold no message (queued, delayed or in work)."""
    broker = redis.Redis.from_url(stack.redis_url)
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if not any_held(broker, [name for q in BACKGROUND_QUEUES for name in (q, dq_name(q))]):
            break
        time.sleep(0.2)
    return round(time.monotonic() - started, 1)


class RealStack:
    """A fresh stack as ``make run`` lays it out, booted and warmed up (the model loaded)."""

    def __init__(self, servers: Servers, overrides: dict[str, str] | None = None):
        self.servers = servers
        self.overrides = overrides or {}
        self.stack = Stack.create(servers, **shipped_env(), **(overrides or {}))

    def __enter__(self) -> Stack:
        self.stack.start_web(timeout=180)
        # as ops.serve starts them: EMBEDDED_WORKER_PROCESSES write-path processes, each told how
        # many share the cores, EMBEDDED_BACKGROUND_NICE lower than the web; the enricher
        # EMBEDDED_ENRICHER_NICE lower still, with as many threads as the worker
        settings = Settings(**self.overrides)
        processes = settings.resolved_embedded_worker_processes
        self.stack.start_worker(processes=processes, threads=settings.worker_threads,
                                queues=["persist", "embed", "maintenance"], nice=settings.embedded_background_nice)
        self.stack.start_enrich_worker(threads=settings.worker_threads, nice=settings.embedded_enricher_niceness)
        with self.stack.client(timeout=180) as api:
            assert api.post("/memory", json={"content": "warm-up"}).status_code == 201
        # The warm-up's enrichment builds spaCy (seconds of CPU, once per enricher): let it end
        # before a phase is timed, or the first import pays it beside the model.
        wait_background_done(self.stack, timeout=180)
        return self.stack

    def __exit__(self, *exc) -> None:
        self.stack.stop()
        if exc[0] is None:
            discard_data(self.stack)


def bench_import(servers: Servers, export: Path, timeout: float, overrides: dict[str, str]) -> dict:
    with RealStack(servers, overrides) as stack:
        meter = CpuMeter(stack, servers)
        started = time.monotonic()
        summary, _, _ = _importer_with_rss(stack, export)
        accepted = time.monotonic()
        done = _wait_recallable(stack, summary["imported"] + 1, timeout)
        cpu = meter.per_memory_ms(summary["imported"])
        background = wait_background_done(stack, timeout)
        imported = summary["imported"]
        return {"memories": imported, "accept_s": round(accepted - started, 1), "end_to_end_s": round(done - started, 1),
                "rate": round(imported / (done - started), 1), "cpu_ms_per_memory": cpu,
                "background_after_recallable_s": round(background, 1),
                "background_after_last_write_s": round(done + background - accepted, 1)}


def bench_singles(servers: Servers, turns: list[dict], clients: int, timeout: float, overrides: dict[str, str]) -> dict:
    local = threading.local()
    headers = {**AUTH, "Content-Type": "application/json"}
    latencies: list[float] = []

    def write(body: dict) -> int:
        if not hasattr(local, "conn"):
            local.conn = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=120)
        sent = time.monotonic()
        local.conn.request("POST", "/memory", body=orjson.dumps(body), headers=headers)
        response = local.conn.getresponse()
        response.read()
        latencies.append(time.monotonic() - sent)
        return response.status

    with RealStack(servers, overrides) as stack:
        meter = CpuMeter(stack, servers)
        started = time.monotonic()
        with ThreadPoolExecutor(clients) as pool:
            codes = list(pool.map(write, turns))
        answered = time.monotonic()
        stored = sum(1 for c in codes if c in (201, 202))
        done = _wait_recallable(stack, stored + 1, timeout)
        cpu = meter.per_memory_ms(stored)
        background = wait_background_done(stack, timeout)
        latencies.sort()
        return {"clients": clients, "memories": stored, "status_201": sum(1 for c in codes if c == 201),
                "refused": len(codes) - stored, "end_to_end_s": round(done - started, 1),
                "rate": round(stored / (done - started), 1), "cpu_ms_per_memory": cpu,
                "write_p50_ms": round(latencies[len(latencies) // 2] * 1000, 1),
                "write_p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 1),
                "background_after_last_write_s": round(done + background - answered, 1)}


def as_worker_calls(rate: float, raw_model: dict) -> str:
    """``rate`` against the model called as a worker's threads call it, for a table cell: "rate (ratio)"."""
    worker = (raw_model.get("as_worker_calls") or {}).get("rate")
    return f"{worker} ({rate / worker:.0%})" if worker else "–"


def render(report: dict) -> str:
    lines = ["| phase | settings | memories | raw model /s (in order / length-sorted) | pipeline /s | ratio (in order / sorted) "
             "| model as a worker calls it /s (ratio) | CPU ms/memory | enrich+similar after last write |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in report["rows"]:
        raw = row["raw_model"]["rate"]
        sorted_rate = row["raw_model"].get("length_sorted", {}).get("rate")
        raws = f"{raw} / {sorted_rate}" if sorted_rate else f"{raw}"
        ratios = f"{row['rate'] / raw:.0%}" + (f" / {row['rate'] / sorted_rate:.0%}" if sorted_rate else "")
        lines.append(f"| {row['phase']} | {row['settings']} | {row['memories']} | {raws} | {row['rate']} | {ratios} "
                     f"| {as_worker_calls(row['rate'], row['raw_model'])} "
                     f"| {row['cpu_ms_per_memory']['total']} | {row['background_after_last_write_s']} s |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.real", description=__doc__.splitlines()[0])
    parser.add_argument("--exports", default="r-contributors,houstondatavis", help="folders of shared/data/slack-dev")
    parser.add_argument("--turns", type=int, default=1500, help="conversation turns for the single writes (0: none)")
    parser.add_argument("--clients", default="8,4")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=VALUE,...",
                        help="settings compared with the shipped ones, each phase alternating (repeatable)")
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_real.json")
    args = parser.parse_args(argv)
    variants = [("shipped", {})] + [(text, dict(pair.split("=", 1) for pair in text.split(","))) for text in args.variant]

    settings = Settings()
    report = {"started": datetime.now(timezone.utc).isoformat(), "load_before": os.getloadavg()[0], "rows": []}
    servers = Servers.start(Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-real-{os.getpid()}")
    try:
        for name in filter(None, args.exports.split(",")):
            export = DATA / "slack-dev" / name
            raw = raw_model_rate(slack_texts(export), settings, sorted_within=settings.slack_import_batch_size)
            for label, overrides in variants:
                row = {"phase": f"slack import {name}", "settings": label, "raw_model": raw,
                       **bench_import(servers, export, args.timeout, overrides)}
                report["rows"].append(row)
                print(f"... {row['phase']} ({label}): {row['rate']}/s, model {raw['rate']}/s", file=sys.stderr, flush=True)
        client_counts = [int(c) for c in filter(None, args.clients.split(","))] if args.turns > 0 else []
        turns = conversation_turns(args.turns) if client_counts else []
        raw = raw_model_rate([t["content"] for t in turns], settings) if client_counts else {}
        for clients in client_counts:
            for label, overrides in variants:
                row = {"phase": f"single POST /memory, {clients} clients", "settings": label, "raw_model": raw,
                       **bench_singles(servers, turns, clients, args.timeout, overrides)}
                report["rows"].append(row)
                print(f"... {row['phase']} ({label}): {row['rate']}/s, model {raw['rate']}/s", file=sys.stderr, flush=True)
    finally:
        servers.stop()
    report["load_after"] = os.getloadavg()[0]
    print(render(report))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
