"""Soak: concurrent clients mixing single writes, batch writes and recalls for a bounded time.

    python -m ops.bench.soak --seconds 60                 # starts the embedded default (ops.serve) itself
    python -m ops.bench.soak --seconds 600 --clients 8 --provider local

Reports per operation: throughput, latency percentiles, errors (anything but a 2xx; 429s
are counted apart, as deliberate back-pressure); the queue depth sampled every second; the
RSS of every process of the service at start and at end; and, after the load stops, how long
the write path (persist, embed, vectors) took to drain and whether every acknowledged write is in the graph and the
vector index exactly once. Prints a table and writes ops/bench/results/soak.json. Exit status 1
on any error or a failed reconciliation.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

from ops.bench.embedded import EmbeddedService, rss_mb

RESULTS = Path(__file__).resolve().parent / "results"
WORDS = ("database billing postgres deploy release incident meeting design review cache latency queue "
         "worker memory graph vector recall budget roadmap customer invoice backup restore outage metric "
         "alert schema migration index shard token auth login session agent preference decision").split()
OPERATIONS = ("single_write", "batch_write", "recall")
WRITE_PATH_QUEUES = ("persist", "embed", "vectors")


def _sentence(rng: random.Random, n: int = 12) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


class Load:
    """Shared counters of a run; each client thread records into it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)
        self.throttled: dict[str, int] = defaultdict(int)
        self.error_samples: list[str] = []
        self.acknowledged = 0  # memories the service answered 2xx for

    def record(self, op: str, seconds: float, status: int | None, detail: str = "", memories: int = 0) -> None:
        with self.lock:
            if status is not None and 200 <= status < 300:
                self.latencies[op].append(seconds)
                self.acknowledged += memories
            elif status == 429:
                self.throttled[op] += 1
            else:
                self.errors[op] += 1
                if len(self.error_samples) < 20:
                    self.error_samples.append(f"{op} {status}: {detail[:200]}")


def client_loop(base_url: str, headers: dict[str, str], load: Load, stop: threading.Event, seed: int,
                weights: dict[str, int], batch_size: int, tag: str) -> None:
    rng = random.Random(seed)
    ops, cum = list(weights), list(weights.values())
    with httpx.Client(base_url=base_url, headers=headers, timeout=60) as api:
        while not stop.is_set():
            op = rng.choices(ops, weights=cum)[0]
            started = time.perf_counter()
            try:
                if op == "single_write":
                    body = {"content": f"{_sentence(rng)} #{uuid.uuid4().hex[:8]}", "tags": [tag, f"t{rng.randrange(20)}"],
                            "importance": round(rng.random(), 2)}
                    response = api.post("/memory", json=body)
                    count = 1
                elif op == "batch_write":
                    items = [{"content": f"{_sentence(rng)} #{uuid.uuid4().hex[:8]}", "tags": [tag, f"t{rng.randrange(20)}"]}
                             for _ in range(batch_size)]
                    response = api.post("/memory/batch", json={"memories": items})
                    count = response.json().get("accepted_count", 0) if response.status_code < 300 else 0
                else:
                    params: dict[str, Any] = {"query": _sentence(rng, 3), "limit": 10}
                    if rng.random() < 0.5:
                        params["tags"] = f"t{rng.randrange(20)}"
                    response = api.get("/recall", params=params)
                    count = 0
                load.record(op, time.perf_counter() - started, response.status_code, response.text, count)
                if response.status_code == 429:
                    time.sleep(float(response.headers.get("Retry-After", "1")))
            except httpx.HTTPError as exc:
                load.record(op, time.perf_counter() - started, None, f"{type(exc).__name__}: {exc}")


def sample_queues(base_url: str, headers: dict[str, str], stop: threading.Event, samples: list[dict[str, Any]],
                  started: float) -> None:
    with httpx.Client(base_url=base_url, headers=headers, timeout=10) as api:
        while not stop.wait(1.0):
            try:
                health = api.get("/health").json()
                queues = health.get("queues") or {}
                # The write path (persist → embed → vectors) apart from enrichment, which trails
                # it by design and may lag under sustained load without holding up recall.
                write_path = sum(v for k, v in queues.items() if k in WRITE_PATH_QUEUES)
                samples.append({"t": round(time.monotonic() - started, 1), "write_path": write_path,
                                "total": sum(queues.values()), **queues, "memory_count": health.get("memory_count")})
            except (httpx.HTTPError, ValueError):
                samples.append({"t": round(time.monotonic() - started, 1), "total": None})


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)

    return {"p50_ms": at(0.50), "p95_ms": at(0.95), "p99_ms": at(0.99), "max_ms": round(ordered[-1] * 1000, 1),
            "mean_ms": round(statistics.fmean(ordered) * 1000, 1)}


def rss_by_process(service: EmbeddedService) -> dict[str, float]:
    found: dict[str, float] = {}
    for role, pids in service.processes().items():
        for index, pid in enumerate(sorted(pids)):
            mb = rss_mb(pid)
            if mb is not None:
                found[f"{role}[{index}]" if len(pids) > 1 else role] = round(mb, 1)
    return found


def drain(base_url: str, headers: dict[str, str], expected: int, timeout: float) -> dict[str, Any]:
    """Wait until the queues are empty and every acknowledged memory is in both stores."""
    started = time.monotonic()
    health: dict[str, Any] = {}
    with httpx.Client(base_url=base_url, headers=headers, timeout=10) as api:
        while time.monotonic() - started < timeout:
            health = api.get("/health").json()
            queues = {k: v for k, v in (health.get("queues") or {}).items() if k != "enrich"}
            if not any(queues.values()) and health.get("memory_count") == expected == health.get("vector_count"):
                break
            time.sleep(0.5)
    return {
        "seconds": round(time.monotonic() - started, 1),
        "acknowledged": expected,
        "memory_count": health.get("memory_count"),
        "vector_count": health.get("vector_count"),
        "queues": health.get("queues"),
        "dead_letters": health.get("dead_letter_count"),
        "reconciled": health.get("memory_count") == expected == health.get("vector_count")
                      and health.get("dead_letter_count") == 0,
    }


def print_report(report: dict[str, Any]) -> None:
    print(f"soak: {report['seconds']} s, {report['clients']} clients, provider {report['provider']}, "
          f"load average {report['load_average_start'][0]} → {report['load_average_end'][0]}")
    print(f"{'operation':<14} {'ok':>7} {'req/s':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8} {'errors':>7} {'429':>5}")
    for op, row in report["operations"].items():
        lat = row["latency"]
        print(f"{op:<14} {row['ok']:>7} {row['per_second']:>7} {lat.get('p50_ms', '-'):>8} {lat.get('p95_ms', '-'):>8} "
              f"{lat.get('p99_ms', '-'):>8} {lat.get('max_ms', '-'):>8} {row['errors']:>7} {row['throttled']:>5}")
    print(f"memories acknowledged: {report['memories_acknowledged']} ({report['memories_per_second']}/s)")
    for name in ("write_path", "enrich"):
        depths = [s[name] for s in report["queue_depth"] if s.get(name) is not None]
        if depths:
            print(f"queue depth, {name.replace('_', ' ')}: max {max(depths)}, mean {statistics.fmean(depths):.0f}, "
                  f"at the end of the load {depths[-1]}")
    d = report["drain"]
    print(f"drain: {d['seconds']} s; graph {d['memory_count']}, vectors {d['vector_count']}, acknowledged "
          f"{d['acknowledged']}, dead letters {d['dead_letters']} → {'reconciled' if d['reconciled'] else 'NOT RECONCILED'}")
    print(f"{'process':<16} {'RSS start MB':>13} {'RSS end MB':>11}")
    for name in sorted(set(report["rss_start_mb"]) | set(report["rss_end_mb"])):
        print(f"{name:<16} {report['rss_start_mb'].get(name, '-'):>13} {report['rss_end_mb'].get(name, '-'):>11}")
    for sample in report["error_samples"]:
        print(f"  error: {sample}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=20)
    parser.add_argument("--mix", default="single_write=4,batch_write=1,recall=5",
                        help="relative weights of the operations")
    parser.add_argument("--provider", default="hash", choices=["hash", "local"],
                        help="embedding provider of the service it starts (hash: the pipeline, not the model)")
    parser.add_argument("--drain-timeout", type=float, default=300)
    parser.add_argument("--out", type=Path, default=RESULTS / "soak.json")
    args = parser.parse_args(argv)
    weights = {k: int(v) for k, v in (part.split("=") for part in args.mix.split(","))}
    unknown = set(weights) - set(OPERATIONS)
    if unknown:
        parser.error(f"unknown operations in --mix: {', '.join(sorted(unknown))}")

    service = EmbeddedService({"EMBEDDING_PROVIDER": args.provider, "LOG_LEVEL": "WARNING"})
    print("starting the embedded default ...", flush=True)
    service.start()
    try:
        base_url, headers = service.url, service.headers
        rss_start = rss_by_process(service)
        load_start = [round(x, 2) for x in os.getloadavg()]
        load, stop, samples = Load(), threading.Event(), []
        tag = f"soak-{uuid.uuid4().hex[:6]}"
        started = time.monotonic()
        threads = [threading.Thread(target=client_loop, daemon=True,
                                    args=(base_url, headers, load, stop, seed, weights, args.batch_size, tag))
                   for seed in range(args.clients)]
        sampler = threading.Thread(target=sample_queues, args=(base_url, headers, stop, samples, started), daemon=True)
        for thread in [*threads, sampler]:
            thread.start()
        stop.wait(args.seconds)
        stop.set()
        for thread in [*threads, sampler]:
            thread.join(90)
        elapsed = time.monotonic() - started
        rss_end_loaded = rss_by_process(service)
        drained = drain(base_url, headers, load.acknowledged, args.drain_timeout)
    finally:
        service.stop()

    report = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seconds": round(elapsed, 1), "clients": args.clients, "mix": weights, "batch_size": args.batch_size,
        "provider": args.provider,
        # Other jobs may share the machine: the load average puts the figures in context.
        "load_average_start": load_start, "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "operations": {op: {"ok": len(load.latencies[op]), "per_second": round(len(load.latencies[op]) / elapsed, 1),
                            "errors": load.errors[op], "throttled": load.throttled[op],
                            "latency": percentiles(load.latencies[op])} for op in weights},
        "memories_acknowledged": load.acknowledged,
        "memories_per_second": round(load.acknowledged / elapsed, 1),
        "errors": sum(load.errors.values()),
        "error_samples": load.error_samples,
        "queue_depth": samples,
        "rss_start_mb": rss_start,
        "rss_end_mb": rss_end_loaded,
        "drain": drained,
    }
    print_report(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"wrote {args.out}")
    return 0 if report["errors"] == 0 and drained["reconciled"] else 1


if __name__ == "__main__":
    sys.exit(main())
