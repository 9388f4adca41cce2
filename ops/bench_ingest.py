"""Ingestion benchmark over the real stack: accepted → recallable, end to end.

    python -m ops.bench_ingest [--messages 100000] [--local-messages 4000] [--singles 10000] [--quick]

For each embedding provider (``hash``, ``local``) and 1 and 2 worker processes, on a fresh
stack (real redis-server + FalkorDB, uvicorn web owning Qdrant Edge, Dramatiq workers):

- **batch**: a synthetic Slack export (``ops.gen_slack_export``) imported with
  ``ops.slack_import`` through ``POST /memory/batch``; messages/s from the first request
  until every imported memory is in the graph *and* the vector index.
- **single**: ``POST /memory`` (``wait=false``) from 8 concurrent clients; memories/s until
  all are recallable.
- **raw model**: the local model embedding the same texts in this process, with nothing
  else running: the physical limit the ``local`` pipeline is compared to.
- **importer peak RSS** on a small and the large export (it must stay flat).

Prints a table, writes JSON to ``ops/results/``. Figures from a shared 2-core machine are
noisy: compare ratios within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import httpx
import redis

from ops.gen_slack_export import generate
from pipeline.tracking import INFLIGHT_KEY
from tests.stack import API_TOKEN, Servers, Stack

RESULTS = Path(__file__).resolve().parent / "results"


def _wait_recallable(stack: Stack, expected: int, timeout: float) -> float:
    """Block until the graph and the vector index hold ``expected`` memories; returns when."""
    broker = redis.Redis.from_url(stack.redis_url)
    deadline = time.monotonic() + timeout
    health = None
    with stack.client(timeout=120) as api:
        while time.monotonic() < deadline:
            health = api.get("/health").json()
            if health["memory_count"] >= expected and health["vector_count"] >= expected and broker.scard(INFLIGHT_KEY) == 0:
                return time.monotonic()
            time.sleep(0.2)
    raise TimeoutError(f"not recallable after {timeout}s: {health}")


def _importer_with_rss(stack: Stack, export: Path) -> tuple[dict, int]:
    args = [sys.executable, "-m", "ops.slack_import", str(export), "--url", stack.url, "--token", API_TOKEN,
            "--no-progress", "--json"]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(args, cwd=Path(__file__).resolve().parents[1], env=stack.env(), stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)  # rusage of this child alone: its peak RSS
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        if process.returncode != 0:
            raise RuntimeError(f"importer failed: {err.read()[-2000:]}")
        return json.loads(out.read().strip().splitlines()[-1]), int(usage.ru_maxrss)


def bench_batch(stack: Stack, export: Path, timeout: float) -> dict:
    started = time.monotonic()
    summary, rss_kib = _importer_with_rss(stack, export)
    accepted_at = time.monotonic()
    done = _wait_recallable(stack, summary["imported"], timeout)
    return {
        "messages": summary["messages"], "imported": summary["imported"], "skipped": sum(summary["skipped"].values()),
        "reconciles": summary["reconciles"], "accept_s": round(accepted_at - started, 2),
        "end_to_end_s": round(done - started, 2), "rate": round(summary["imported"] / (done - started), 1),
        "importer_peak_rss_mib": round(rss_kib / 1024, 1),
    }


def bench_singles(stack: Stack, count: int, concurrency: int, timeout: float) -> dict:
    local = threading.local()

    def client() -> httpx.Client:
        if not hasattr(local, "client"):
            local.client = stack.client()
        return local.client

    def write(i: int) -> int:
        body = {"content": f"single write {i}: {' '.join(str(i * k % 977) for k in range(12))}", "tags": ["bench:single"]}
        return client().post("/memory", params={"wait": "false"}, json=body).status_code

    started = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        codes = list(pool.map(write, range(count)))
    accepted_at = time.monotonic()
    refused = sum(1 for c in codes if c != 202)
    done = _wait_recallable(stack, count - refused, timeout)
    return {
        "writes": count, "refused": refused, "accept_rate": round(count / (accepted_at - started), 1),
        "end_to_end_s": round(done - started, 2), "rate": round((count - refused) / (done - started), 1),
    }


def raw_model_rate(export: Path, limit: int) -> dict:
    """The local model alone, same texts, same batch size, all cores to itself."""
    from pipeline.embedding import LocalEmbedder
    from pipeline.slack.export import SlackExport

    texts: list[str] = []
    with SlackExport(export) as slack:
        _, conversations, _ = slack.directory()
        for conversation in conversations:
            texts += [m.message.get("text", "") for m in slack.messages(conversation)]
            if len(texts) >= limit:
                break
    texts = [t for t in texts[:limit] if t]
    embedder = LocalEmbedder(batch_size=64)
    embedder.embed(texts[:64])  # warm-up
    started = time.monotonic()
    for start in range(0, len(texts), 64):
        embedder.embed(texts[start:start + 64])
    elapsed = time.monotonic() - started
    return {"texts": len(texts), "seconds": round(elapsed, 2), "rate": round(len(texts) / elapsed, 1)}


def run_config(servers: Servers, provider: str, workers: int, export: Path, singles: int, timeout: float) -> dict:
    stack = Stack.create(servers, EMBEDDING_PROVIDER=provider, EDGE_OPTIMIZE_INTERVAL_S="30",
                         BACKPRESSURE_MAX_PENDING="20000", ACTOR_MAX_RETRIES="12")
    try:
        stack.start_web(timeout=120)
        stack.start_worker(processes=workers, threads=2)
        with stack.client() as api:  # let the workers boot (and load the model) before timing
            api.post("/memory", json={"content": "warm-up"})
        row = {"provider": provider, "workers": workers, "batch": bench_batch(stack, export, timeout)}
        if singles:
            row["single"] = bench_singles(stack, singles, 8, timeout)
        return row
    except Exception:
        print(f"--- web log ---\n{stack.read_log('web')}\n--- worker log ---\n{stack.read_log('worker')}", file=sys.stderr)
        raise
    finally:
        stack.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench_ingest", description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000, help="synthetic export size for the hash provider")
    parser.add_argument("--local-messages", type=int, default=4_000, help="export size for the local model")
    parser.add_argument("--singles", type=int, default=10_000, help="single POST /memory writes (hash provider)")
    parser.add_argument("--small", type=int, default=10_000, help="small export for the importer RSS comparison")
    parser.add_argument("--providers", default="hash,local")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args(argv)

    base = Path(tempfile.mkdtemp(prefix="mempipe-bench-"))
    exports = {"hash": base / "export-hash", "local": base / "export-local", "small": base / "export-small"}
    generate(exports["hash"], args.messages)
    generate(exports["local"], args.local_messages, seed=11)
    generate(exports["small"], args.small, seed=13)
    servers = Servers.start(base / "servers")
    rows, extra = [], {}
    try:
        providers = [p for p in args.providers.split(",") if p]
        worker_counts = [int(w) for w in args.workers.split(",") if w]
        for provider in providers:
            for workers in worker_counts:
                export = exports["hash" if provider == "hash" else "local"]
                singles = args.singles if provider == "hash" else 0
                print(f"... {provider}, {workers} worker process(es)", file=sys.stderr, flush=True)
                rows.append(run_config(servers, provider, workers, export, singles, args.timeout))
        small = Stack.create(servers, EMBEDDING_PROVIDER="hash")
        try:
            small.start_web()
            small.start_worker()
            extra["importer_rss_small"] = bench_batch(small, exports["small"], args.timeout)
        finally:
            small.stop()
        # Last: once torch is loaded here, every importer forked afterwards would start with
        # this process's resident pages in its peak-RSS figure.
        if "local" in providers:
            extra["raw_model"] = raw_model_rate(exports["local"], args.local_messages)
    finally:
        servers.stop()

    print(f"\n{'provider':<8} {'workers':>7} {'messages':>9} {'batch e2e/s':>12} {'importer RSS':>13} {'single e2e/s':>13}")
    for row in rows:
        single = row.get("single", {}).get("rate", "-")
        print(f"{row['provider']:<8} {row['workers']:>7} {row['batch']['messages']:>9} {row['batch']['rate']:>12} "
              f"{row['batch']['importer_peak_rss_mib']:>10} MiB {single:>13}")
    if "raw_model" in extra:
        raw = extra["raw_model"]["rate"]
        print(f"\nlocal model alone: {raw} texts/s")
        for row in rows:
            if row["provider"] == "local":
                row["ratio_to_raw_model"] = round(row["batch"]["rate"] / raw, 3)
                print(f"  pipeline with {row['workers']} worker(s): {row['batch']['rate']}/s = {row['ratio_to_raw_model']:.0%} of raw")
    if "importer_rss_small" in extra:
        s = extra["importer_rss_small"]
        print(f"\nimporter peak RSS: {s['importer_peak_rss_mib']} MiB at {s['messages']} messages; "
              + ", ".join(f"{r['batch']['importer_peak_rss_mib']} MiB at {r['batch']['messages']}" for r in rows))
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = RESULTS / f"bench_ingest-{stamp}.json"
    out.write_text(json.dumps({"when": stamp, "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                               "args": vars(args), "rows": rows, **extra}, indent=2))
    print(f"\nwritten: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
