"""What the Edge shard's scored text index costs: on writes, on the one-off migration, per query.

    python -m ops.bench.edge_text [--points 20000] [--queries 300]

Three fresh shards in a temporary directory, the same points (``ops.bench.recall``'s
synthetic memories, hash vectors) upserted in batches of 500:

- *without*: the layout before the index (``content`` inside the packed document, no index);
- *with*: the current layout (``content`` native, the BM25 text index kept up to date);
- *migrated*: written as *without*, then repacked by ``backfill_text()`` (what the maintenance
  thread does once to an older shard).

Then ``text_search`` (limit 20; plain and tag-scoped) over the *with* shard. Figures are CPU
seconds of this process (``time.process_time``), which a shared machine disturbs far less than
wall-clock time; wall-clock is printed beside them. Prints a table and writes
ops/bench/results/bench_edge_text.json.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

import orjson

from ops.bench.recall import make_records, vocabulary
from pipeline.embedding import HashEmbedder
from pipeline.graph import Scope, TagFilter
from pipeline.vectors import EdgeVectorStore, VectorPoint, edge_text, vector_payload
from pipeline.vectors import edge as edge_store

RESULTS = Path(__file__).resolve().parent / "results"
BATCH = 500


def timed(action) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    action()
    return time.process_time() - cpu, time.perf_counter() - wall


def write(path: str, points: list[VectorPoint], indexed: bool) -> tuple[EdgeVectorStore, tuple[float, float]]:
    """A shard holding ``points``; ``indexed=False``: the layout before the text index."""
    saved = edge_store.EDGE_NATIVE_FIELDS, edge_text.ensure_index
    if not indexed:
        edge_store.EDGE_NATIVE_FIELDS = saved[0] - {edge_text.TEXT_FIELD}
        edge_text.ensure_index = lambda *args, **kwargs: None
    try:
        store = EdgeVectorStore(path, HashEmbedder().dimensions, optimize_min_changes=10**9)
        store.ensure_collection()
        cost = timed(lambda: [store.upsert(points[i: i + BATCH]) for i in range(0, len(points), BATCH)])
    finally:
        edge_store.EDGE_NATIVE_FIELDS, edge_text.ensure_index = saved
    return store, cost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=20000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    words = vocabulary(random.Random(args.seed))
    records = make_records(random.Random(f"records-{args.seed}"), words, 0, args.points)
    vectors = HashEmbedder().embed([r.content for r in records])
    points = [VectorPoint(r.id, v, vector_payload(r.to_message())) for r, v in zip(records, vectors)]
    base = Path(tempfile.mkdtemp(prefix="mempipe-edge-text-"))
    rows = {}

    without, rows["upsert without the index"] = write(str(base / "without"), points, indexed=False)
    without.close()
    with_index, rows["upsert with the index"] = write(str(base / "with"), points, indexed=True)
    migrated, _ = write(str(base / "migrated"), points, indexed=False)
    migrated.close()
    os.remove(base / "migrated" / edge_text.MARKER)
    migrated = EdgeVectorStore(str(base / "migrated"), HashEmbedder().dimensions, optimize_min_changes=10**9)
    migrated.ensure_collection()
    rows["migration (backfill_text)"] = timed(migrated.backfill_text)
    migrated.close()

    rng = random.Random(f"queries-{args.seed}")
    picks = [rng.choice(records) for _ in range(args.queries)]
    plans = [(" ".join(rng.sample(r.content.split(), 4)), r.tags[0]) for r in picks]
    latency = {}
    for name, scoped in (("text_search plain", False), ("text_search tag-scoped", True)):
        samples = []

        def run():
            for text, tag in plans:
                scope = Scope(tags=TagFilter((tag,), "any", "exact")) if scoped else Scope()
                began = time.perf_counter()
                with_index.text_search(text, scope, 20)
                samples.append((time.perf_counter() - began) * 1000)
        rows[name] = timed(run)
        latency[name] = {"p50_ms": round(statistics.median(samples), 3),
                         "p95_ms": round(sorted(samples)[int(0.95 * (len(samples) - 1))], 3)}
    with_index.close()

    per = {"upsert without the index": args.points, "upsert with the index": args.points,
           "migration (backfill_text)": args.points, "text_search plain": args.queries,
           "text_search tag-scoped": args.queries}
    print(f"{args.points} points, {args.queries} queries; load average {[round(x, 2) for x in os.getloadavg()]}")
    print(f"{'step':<28} {'cpu s':>8} {'wall s':>8} {'cpu ms / item':>14}")
    for name, (cpu, wall) in rows.items():
        print(f"{name:<28} {cpu:>8.2f} {wall:>8.2f} {cpu * 1000 / per[name]:>14.3f}")
    for name, figures in latency.items():
        print(f"{name}: p50 {figures['p50_ms']} ms, p95 {figures['p95_ms']} ms (wall, in-process)")
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "bench_edge_text.json"
    path.write_bytes(orjson.dumps({
        "points": args.points, "queries": args.queries, "load_average": os.getloadavg(),
        "cpu_s": {k: v[0] for k, v in rows.items()}, "wall_s": {k: v[1] for k, v in rows.items()},
        "latency": latency,
    }, option=orjson.OPT_INDENT_2))
    print(f"written {path}")


if __name__ == "__main__":
    main()
