"""Accepted → recallable latency at idle, and single-write throughput (hash provider by default).

Measures:
- accepted → recallable latency at idle: p50/p95/p99 of a waiting ``POST /memory`` (a 201
  means the memory is in the graph and the vector index);
- sustained ingest throughput: N fire-and-forget writes from concurrent clients, timed from
  the first request until every memory is in both stores, with 1 and with 2 worker processes.

    python -m ops.bench.latency [--quick] [--provider hash|local] [--writes N]

Prints a table and writes JSON to ops/bench/results/bench_latency.json. Batch and Slack ingestion
are measured by ops.bench.ingest. Figures depend on the
machine (and on what else runs on it): compare the ratios within one run.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson

from ops.bench.stack import Servers, Stack, wait_until

RESULTS = Path(__file__).resolve().parent / "results"


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def idle_latency(stack: Stack, samples: int, gap_s: float) -> dict:
    latencies, statuses = [], []
    with stack.client() as api:
        for i in range(samples):
            started = time.perf_counter()
            response = api.post("/memory", json={"content": f"idle latency probe {i}", "tags": ["bench:latency"]})
            latencies.append((time.perf_counter() - started) * 1000)
            statuses.append(response.status_code)
            time.sleep(gap_s)
    return {
        "samples": samples,
        "recallable_201": statuses.count(201),
        "p50_ms": round(percentile(latencies, 50), 1),
        "p95_ms": round(percentile(latencies, 95), 1),
        "p99_ms": round(percentile(latencies, 99), 1),
        "max_ms": round(max(latencies), 1),
        "mean_ms": round(statistics.mean(latencies), 1),
    }


def throughput(stack: Stack, writes: int, clients: int) -> dict:
    def send(indexes: range) -> None:
        with stack.client() as api:
            for i in indexes:
                response = api.post("/memory", params={"wait": "false"},
                                    json={"content": f"sustained ingest message {i} about topic {i % 97}",
                                          "tags": ["bench:ingest", f"bench:topic:{i % 97}"]})
                response.raise_for_status()

    with stack.client() as api:
        baseline = api.get("/health").json()["vector_count"]
    chunks = [range(k, writes, clients) for k in range(clients)]
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(send, chunks))
    accepted_s = time.perf_counter() - started
    with stack.client() as api:
        wait_until(
            lambda: api.get("/health").json()["vector_count"] >= baseline + writes,
            timeout=max(120.0, writes / 5), interval=0.05, message="all writes recallable",
        )
        health = api.get("/health").json()
    total_s = time.perf_counter() - started
    return {
        "writes": writes,
        "clients": clients,
        "accept_rate_per_s": round(writes / accepted_s, 1),
        "recallable_rate_per_s": round(writes / total_s, 1),
        "seconds_to_all_recallable": round(total_s, 2),
        "memory_count": health["memory_count"],
        "vector_count": health["vector_count"],
        "dead_letters": health["dead_letter_count"],
    }


def run_config(servers: Servers, provider: str, worker_processes: int, writes: int, latency_samples: int) -> dict:
    stack = Stack.create(servers, EMBEDDING_PROVIDER=provider)
    try:
        stack.start_web(timeout=180)
        stack.start_worker(processes=worker_processes, threads=4)
        with stack.client() as api:  # warm up: model loaded, queues polled
            api.post("/memory", json={"content": "warm up", "tags": ["bench:warmup"]})
        result = {"provider": provider, "worker_processes": worker_processes}
        if latency_samples:
            result["idle_latency"] = idle_latency(stack, latency_samples, gap_s=0.05)
        result["throughput"] = throughput(stack, writes, clients=4)
        return result
    finally:
        stack.stop()


def machine() -> dict:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    memory_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cores": os.cpu_count(), "ram_gb": round(memory_gb, 1), "python": platform.python_version(), "commit": commit,
            "date": time.strftime("%Y-%m-%d")}


def table(results: list[dict]) -> str:
    lines = [
        "| provider | workers | idle p50 ms | idle p95 ms | idle p99 ms | writes | accepted/s | recallable/s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lat = r.get("idle_latency", {})
        t = r["throughput"]
        lines.append(
            f"| {r['provider']} | {r['worker_processes']} | {lat.get('p50_ms', '–')} | {lat.get('p95_ms', '–')} | "
            f"{lat.get('p99_ms', '–')} | {t['writes']} | {t['accept_rate_per_s']} | {t['recallable_rate_per_s']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", default="hash", choices=("hash", "local"))
    parser.add_argument("--writes", type=int, default=3000)
    parser.add_argument("--latency-samples", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="smaller run (about a minute)")
    args = parser.parse_args(argv)
    if args.quick:
        args.writes, args.latency_samples = 600, 100

    servers = Servers.start(Path(tempfile.mkdtemp(prefix="mempipe-bench-")))
    try:
        results = [
            run_config(servers, args.provider, 1, args.writes, args.latency_samples),
            run_config(servers, args.provider, 2, args.writes, 0),
        ]
    finally:
        servers.stop()
    one, two = results[0]["throughput"]["recallable_rate_per_s"], results[1]["throughput"]["recallable_rate_per_s"]
    report = {"machine": machine(), "results": results, "ratio_2_workers_over_1": round(two / one, 2)}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_latency.json").write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    print(table(results))
    print(f"\n2 workers / 1 worker throughput: {report['ratio_2_workers_over_1']}x   "
          f"({report['machine']['cores']} cores, {report['machine']['ram_gb']} GiB, commit {report['machine']['commit']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
