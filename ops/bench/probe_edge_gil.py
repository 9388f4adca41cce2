"""Does the Edge index build let other Python threads run? A heartbeat beside ``optimize()``.

    python -m ops.bench.probe_edge_gil [--points 20000]

Fills a fresh Edge shard with random vectors, starts a thread that wakes every 10 ms, and
runs the HNSW build (``EdgeVectorStore.maintain``) on the main thread. A build that released
the GIL would see ~100 heartbeats a second; ``qdrant_edge`` 0.9 holds it, so the web process
that owns the shard answers nothing while it builds. Prints one row and writes
``ops/bench/results/probe_edge_gil.json``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
import uuid
from pathlib import Path

import numpy as np

from pipeline.vectors import EdgeVectorStore, VectorPoint

RESULTS = Path(__file__).resolve().parent / "results"
HEARTBEAT_S = 0.01


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=20_000)
    args = parser.parse_args()

    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory(prefix="mempipe-gil-") as directory:
        store = EdgeVectorStore(f"{directory}/shard", 384, optimize_min_changes=1)
        store.ensure_collection()
        for start in range(0, args.points, 2000):
            count = min(2000, args.points - start)
            store.upsert([VectorPoint(str(uuid.uuid4()), rng.standard_normal(384).tolist(), {"tags": ["t"]})
                          for _ in range(count)])
        beats: list[float] = []
        stop = threading.Event()

        def heartbeat() -> None:
            while not stop.is_set():
                beats.append(time.perf_counter())
                time.sleep(HEARTBEAT_S)

        thread = threading.Thread(target=heartbeat, daemon=True)
        thread.start()
        time.sleep(0.3)
        began = time.perf_counter()
        store.maintain()
        ended = time.perf_counter()
        stop.set()
        thread.join()
        store.close()

    seconds = ended - began
    during = sum(1 for t in beats if began < t < ended)
    expected = int(seconds / HEARTBEAT_S)
    row = {"points": args.points, "build_s": round(seconds, 2), "heartbeats": during,
           "heartbeats_if_released": expected, "share": round(during / expected, 4) if expected else None}
    print(f"{'points':>8} {'build s':>8} {'heartbeats':>11} {'if released':>12}")
    print(f"{row['points']:>8} {row['build_s']:>8} {row['heartbeats']:>11} {row['heartbeats_if_released']:>12}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "probe_edge_gil.json").write_text(json.dumps(row, indent=2))


if __name__ == "__main__":
    main()
