"""Does an update move a point out of Qdrant Edge's HNSW index? A search's time says.

    python -m ops.bench.probe_edge_moves [--points 40000]

For each of no update, ``set_payload`` and an upsert of the same vectors: builds a shard of
``--points`` random 384-d points (``optimize()``), times 50 single searches (best of 5), updates
half of the points that way and times them again; prints the shard's ``indexed_vectors_count``
after too. A search that slows as a plain scan of the updated half would, with the count
unchanged, is a point moved to a plain segment that Qdrant's count still calls indexed
(docs/benchmarks-log.md, session 30). Tooling, not product.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

from pipeline.vectors.edge_swap import ShardLayout

DIMS = 384


def best_search_ms(shard, qe, queries) -> float:
    best = float("inf")
    for _ in range(5):
        began = time.perf_counter()
        for request in queries:
            shard.query(request)
        best = min(best, (time.perf_counter() - began) * 1000 / len(queries))
    return round(best, 3)


def main(argv: list[str] | None = None) -> int:
    import qdrant_edge as qe

    parser = argparse.ArgumentParser(prog="python -m ops.bench.probe_edge_moves", description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=40_000)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    points = [qe.Point(i + 1, rng.standard_normal(DIMS).astype(np.float32).tolist(), {"k": i}) for i in range(args.points)]
    queries = [qe.QueryRequest(limit=10, query=qe.Query.Nearest(rng.standard_normal(DIMS).astype(np.float32).tolist()))
               for _ in range(50)]
    half = args.points // 2
    print("| update of half the points | search ms before | after | indexed_vectors_count after |\n|---|---|---|---|")
    for how in ("none", "set_payload", "upsert"):
        with tempfile.TemporaryDirectory() as directory:
            shard = qe.EdgeShard.create(directory, ShardLayout(DIMS, "cached").config(qe))
            for start in range(0, args.points, 2000):
                shard.update(qe.UpdateOperation.upsert_points(points[start:start + 2000]))
            shard.optimize()
            before = best_search_ms(shard, qe, queries)
            if how == "set_payload":
                shard.update(qe.UpdateOperation.set_payload(list(range(1, half + 1)), {"tag": "x"}))
            elif how == "upsert":
                shard.update(qe.UpdateOperation.upsert_points(points[:half]))
            print(f"| {how} | {before} | {best_search_ms(shard, qe, queries)} | {shard.info().indexed_vectors_count} |")
            shard.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
