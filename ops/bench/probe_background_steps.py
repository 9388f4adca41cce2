"""What a recall waits for beside the web's own background vector work, by how that work is cut.

    python -m ops.bench.probe_background_steps [--points 25000] [--seconds 20] [--rounds 3]

In the embedded default the web process owns the Edge shard: besides answering recalls, its
threads run enrichment's payload refresh and the SIMILAR_TO search batches, and ``qdrant_edge``
holds the GIL for every call. This drives an ``EdgeVectorStore`` directly (no service, no
model): a shard of ``--points`` random 384-d vectors with real texts as content, unbuilt as
during an import; one thread stands for recall (a vector search and a keyword search, marked
in flight as the web marks ``/recall``, every 100 ms); another stands for the background
(``replace_payloads`` of 128 points, then ``search_many`` of 128 queries, in a loop, with the
gate's ``give_way``). A recall is timed from when it was due. Per variant, alternating over ``--rounds``:

- ``before``: searches split to scan ~1,000,000 points a call, payload writes in one step with
  no wait (the code before session 37);
- ``steps``: the shipped cut (``SEARCH_BATCH_SCAN_POINTS``, ``PAYLOAD_CHUNK`` steps that give way).

Reports the recall's latency (p50 / p99 / max) and what the background got done (payload
points and searches per second). A part, not the user's way: no model, no HTTP, no other
process. Prints a table and writes ``ops/bench/results/probe_background_steps.json``. Tooling,
not product.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import numpy as np

from ops.bench.probe_edge_open import DIMS, WORDS, corpus
from pipeline.foreground import Foreground
from pipeline.graph import Scope
from pipeline.vectors import EdgeVectorStore, VectorPoint, VectorQuery, edge, vector_payload

RESULTS = Path(__file__).resolve().parent / "results"
RECALL_EVERY_S = 0.1
BACKGROUND_BATCH = 128
BEFORE_SCAN_POINTS = 1_000_000  # SEARCH_BATCH_SCAN_POINTS before session 37


def fill(store: EdgeVectorStore, points: int, texts: list[str]) -> list[str]:
    vectors = np.random.default_rng(1).standard_normal((points, DIMS)).astype(np.float32)
    ids = [f"m{i}" for i in range(points)]
    for start in range(0, points, 1000):
        store.upsert([VectorPoint(ids[i], vectors[i].tolist(), vector_payload({
            "id": ids[i], "content": texts[i % len(texts)], "tags": [f"chat:{i % 50}", "slack"], "type": "Context",
            "importance": 0.5, "timestamp": "2025-01-01T00:00:00+00:00"})) for i in range(start, min(points, start + 1000))])
    store.persist()
    return ids


@contextmanager
def variant(store: EdgeVectorStore, name: str) -> Iterator[None]:
    """``before``: the old cut, put back on this store for the length of a round."""
    if name != "before":
        yield
        return
    scan = edge.SEARCH_BATCH_SCAN_POINTS
    edge.SEARCH_BATCH_SCAN_POINTS = BEFORE_SCAN_POINTS
    store._payload_steps = lambda payloads: iter([payloads])  # one step, no wait
    try:
        yield
    finally:
        edge.SEARCH_BATCH_SCAN_POINTS = scan
        del store._payload_steps


def run_round(store: EdgeVectorStore, gate: Foreground, ids: list[str], seconds: float, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    stop = threading.Event()
    done = {"payload_points": 0, "searches": 0}

    def background() -> None:
        while not stop.is_set():
            chosen = [ids[i] for i in rng.choice(len(ids), BACKGROUND_BATCH, replace=False)]
            stored = store.retrieve(chosen)
            store.replace_payloads({m: {**r.payload, "summary": f"round {seed}"} for m, r in stored.items()})
            done["payload_points"] += len(stored)
            queries = rng.standard_normal((BACKGROUND_BATCH, DIMS)).astype(np.float32)
            store.search_many([VectorQuery(q.tolist(), 6, with_payload=False) for q in queries])
            done["searches"] += BACKGROUND_BATCH

    worker = threading.Thread(target=background, daemon=True)
    recall_rng = np.random.default_rng(seed + 1000)
    latencies = []
    started = time.monotonic()
    worker.start()
    due = time.perf_counter()
    while time.monotonic() - started < seconds:
        # Timed from when the recall was due, not from when this thread got the GIL back to
        # send it: a request waits for the GIL to be read off its socket too.
        with gate.request():
            store.search(VectorQuery(recall_rng.standard_normal(DIMS).astype(np.float32).tolist(), 50))
            n = len(latencies)
            store.text_search(f"{WORDS[n % 10]} {WORDS[(n * 3) % 10]}", Scope(), 50)
        latencies.append((time.perf_counter() - due) * 1000)
        due = max(due + RECALL_EVERY_S, time.perf_counter())
        time.sleep(max(0.0, due - time.perf_counter()))
    stop.set()
    worker.join()
    elapsed = time.monotonic() - started
    latencies.sort()
    return {"recalls": len(latencies), "p50_ms": round(statistics.median(latencies), 1),
            "p99_ms": round(latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))], 1),
            "max_ms": round(latencies[-1], 1),
            "payload_points_per_s": round(done["payload_points"] / elapsed, 1),
            "searches_per_s": round(done["searches"] / elapsed, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.probe_background_steps", description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=25_000)
    parser.add_argument("--seconds", type=float, default=20.0, help="length of one round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    gate = Foreground(max_wait_s=0.25)  # WEB_BACKGROUND_YIELD_MAX_MS's default
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="mempipe-background-steps-") as directory:
        # never built: every point stays unindexed, as during an import under the build's threshold
        store = EdgeVectorStore(f"{directory}/shard", DIMS, optimize_min_changes=10**9, give_way=gate.give_way)
        store.ensure_collection()
        try:
            ids = fill(store, args.points, corpus())
            for round_ in range(args.rounds):
                for name in ("before", "steps"):
                    with variant(store, name):
                        rows.append({"variant": name, "round": round_ + 1,
                                     **run_round(store, gate, ids, args.seconds, seed=round_)})
                    print(json.dumps(rows[-1]), flush=True)
        finally:
            store.close()
    columns = ["variant", "round", "recalls", "p50_ms", "p99_ms", "max_ms", "payload_points_per_s", "searches_per_s"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row[c]) for c in columns) + " |")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "probe_background_steps.json").write_text(
        json.dumps({"points": args.points, "seconds": args.seconds, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
