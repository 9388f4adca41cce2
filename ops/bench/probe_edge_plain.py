"""What an Edge shard costs without its HNSW index, and how long each build stalls when it has one.

    python -m ops.bench.probe_edge_plain --points 100000
    python -m ops.bench.probe_edge_plain --points 20000 --build-every 5000 [--max-segment-kb 8000 --segments 32]

The web process that owns the shard answers nothing while ``optimize()`` builds HNSW (the
binding holds the GIL: ``ops.bench.probe_edge_gil``). Two ways around that, measured here on
random 384-d vectors with a 50-value keyword payload:

- never build: every segment stays plain and a search scans it (``--build-every 0``, the
  default): search p50/p95, plain and filtered by one keyword value;
- build in small steps: ``optimize()`` after every ``--build-every`` points, optionally with
  segments capped (``--max-segment-kb``) and merged less (``--segments``): each call's length
  is the longest stall a recall would see.

``--batches 1,100,500`` also times one ``query_batch`` call of each size with a heartbeat
thread beside it (wakes every 10 ms): the longest gap between beats is how long the call held
the GIL (searches hold it too, so a batch of SIMILAR_TO searches stalls the web).

Prints one JSON row and writes ``ops/bench/results/probe_edge_plain.json``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import qdrant_edge as qe

RESULTS = Path(__file__).resolve().parent / "results"
NEVER = 10**9  # KB: no segment ever reaches the indexing threshold


def shard_config(build: bool, max_segment_kb: int | None, segments: int | None):
    optimizers = qe.EdgeOptimizersConfig(indexing_threshold=None if build else NEVER,
                                         max_segment_size=max_segment_kb, default_segment_number=segments)
    return qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=384, distance=qe.Distance.Cosine), optimizers=optimizers)


def search_latency(shard, rng, queries: int, tag: str | None) -> dict:
    condition = qe.Filter(must=[qe.FieldCondition(key="tag", match=qe.MatchValue(tag))]) if tag else None
    times = []
    for _ in range(queries):
        vector = rng.standard_normal(384).tolist()
        started = time.perf_counter()
        shard.search(qe.SearchRequest(query=qe.Query.Nearest(vector), limit=10, filter=condition))
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return {"p50_ms": round(times[len(times) // 2], 2), "p95_ms": round(times[int(len(times) * 0.95)], 2)}


def batch_gil(shard, rng, sizes: list[int]) -> dict:
    """Per batch size: the call's length and the longest heartbeat gap beside it, in ms."""
    import threading

    out = {}
    for size in sizes:
        requests = [qe.QueryRequest(limit=6, query=qe.Query.Nearest(rng.standard_normal(384).tolist()))
                    for _ in range(size)]
        gaps: list[float] = []
        done = threading.Event()

        def beat():
            last = time.perf_counter()
            while not done.is_set():
                time.sleep(0.01)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now
        thread = threading.Thread(target=beat)
        thread.start()
        time.sleep(0.05)
        began = time.perf_counter()
        shard.query_batch(qe.QueryBatchRequest(requests))
        took = time.perf_counter() - began
        time.sleep(0.05)
        done.set()
        thread.join()
        out[size] = {"call_ms": round(took * 1000), "longest_gap_ms": round(max(gaps) * 1000)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.probe_edge_plain", description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--build-every", type=int, default=0, help="optimize() after this many points (0: never build)")
    parser.add_argument("--max-segment-kb", type=int, help="EdgeOptimizersConfig.max_segment_size")
    parser.add_argument("--segments", type=int, help="EdgeOptimizersConfig.default_segment_number")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--batches", default="", help="comma list of query_batch sizes to time with a heartbeat")
    args = parser.parse_args(argv)

    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((args.points, 384)).astype("float32")
    builds: list[float] = []
    with tempfile.TemporaryDirectory(prefix="mempipe-plain-") as directory:
        shard = qe.EdgeShard.create(f"{directory}/shard",
                                    shard_config(args.build_every > 0, args.max_segment_kb, args.segments))
        shard.update(qe.UpdateOperation.create_field_index("tag", qe.PayloadSchemaType.Keyword))
        step = args.build_every or args.points
        started = time.perf_counter()
        for start in range(0, args.points, step):
            for chunk in range(start, min(args.points, start + step), 1000):
                shard.update(qe.UpdateOperation.upsert_points([
                    qe.Point(str(uuid.uuid4()), vectors[i].tolist(), {"tag": f"t{i % 50}"})
                    for i in range(chunk, min(args.points, start + step, chunk + 1000))]))
            if args.build_every:
                began = time.perf_counter()
                shard.optimize()
                builds.append(round(time.perf_counter() - began, 2))
        load_s = time.perf_counter() - started
        row = {"points": args.points, "build_every": args.build_every, "max_segment_kb": args.max_segment_kb,
               "segments": args.segments, "load_s": round(load_s, 1), "builds_s": builds,
               "longest_build_s": max(builds, default=0.0), "plain": search_latency(shard, rng, args.queries, None),
               "tagged": search_latency(shard, rng, args.queries, "t7"), "shard": str(shard.info())[:200]}
        if args.batches:
            row["batch_gil"] = batch_gil(shard, rng, [int(b) for b in args.batches.split(",")])
        shard.close()
    print(json.dumps(row))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "probe_edge_plain.json").write_text(json.dumps(row, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
