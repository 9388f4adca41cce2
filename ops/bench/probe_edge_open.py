"""What opening a built Edge shard costs, with its payload indexes mapped or in the heap.

    python -m ops.bench.probe_edge_open --points 100000 [--payload-indexes ram,disk]

For each placement of the built segments' payload indexes (EDGE_PAYLOAD_INDEXES_ON_DISK:
``disk`` memory-mapped, ``ram`` rebuilt in the heap at each open): one ``EdgeVectorStore`` of
``--points`` random 384-d points whose content is real text from ``../shared/data`` (so the
keyword text index is a real one), given a codes-only build as the web's shard gets under its
plain size, then closed. Each shard is then opened in a fresh process (``qdrant_edge`` alone,
as the web and the swap open it), five times: the open's and the close's median, and the
process's anonymous and file-backed resident memory added by the first open. Last, the store
is opened as the web opens it and times 100 searches of each kind recall makes: plain dense at
limit 50, scoped to one tag, and keyword. Prints a table and writes
``ops/bench/results/probe_edge_open.json``. Tooling, not product.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pipeline.graph import Scope, TagFilter
from pipeline.vectors import EdgeVectorStore, VectorPoint, VectorQuery, vector_payload
from pipeline.vectors.edge_swap import ChildBuildOptions

RESULTS = Path(__file__).resolve().parent / "results"
DIMS = 384
WORDS = ("meeting", "package", "release", "dinner", "question", "plot", "data", "weekend", "dog", "python")

# Run in a fresh process: the first open's resident memory is the process's growth over it.
OPEN_SCRIPT = """
import json, re, statistics, sys, time
import qdrant_edge as qe
from pipeline.vectors import edge_swap

def resident():
    status = open("/proc/self/status").read()
    return {k: int(re.search(k + r":\\s+(\\d+)", status).group(1)) / 1024 for k in ("RssAnon", "RssFile")}

config = edge_swap.ShardLayout(int(sys.argv[2]), "pinned", "int8", True).config(qe)
before = resident()
opens, closes, grown = [], [], None
for _ in range(5):
    started = time.perf_counter(); shard = qe.EdgeShard.load(sys.argv[1], config); opens.append(time.perf_counter() - started)
    if grown is None:
        after = resident()
        grown = {k: round(after[k] - before[k], 1) for k in after}
    started = time.perf_counter(); shard.close(); closes.append(time.perf_counter() - started)
print(json.dumps({"open_ms": round(statistics.median(opens) * 1000, 1), "close_ms": round(statistics.median(closes) * 1000, 1),
                  "heap_mb": grown["RssAnon"], "mapped_mb": grown["RssFile"]}))
"""


def corpus() -> list[str]:
    from ops.bench.probe_decay_moves import texts

    return texts()


def build_shard(path: str, points: int, indexes_on_disk: bool, texts: list[str]) -> None:
    vectors = np.random.default_rng(1).standard_normal((points, DIMS)).astype(np.float32)
    store = open_store(path, points, indexes_on_disk)
    for start in range(0, points, 1000):
        store.upsert([VectorPoint(f"m{i}", vectors[i].tolist(), vector_payload({
            "id": f"m{i}", "content": texts[i % len(texts)], "tags": [f"chat:{i % 50}", "slack"], "type": "Context",
            "importance": 0.5, "timestamp": "2025-01-01T00:00:00+00:00"})) for i in range(start, min(points, start + 1000))])
    store.persist()
    store.maintain()  # a codes-only build in a child, as under the plain size
    while store.build_in_flight():
        time.sleep(0.2)
        store.maintain()
    store.close()


def open_store(path: str, points: int, indexes_on_disk: bool) -> EdgeVectorStore:
    store = EdgeVectorStore(path, DIMS, optimize_min_changes=1, plain_max_points=points * 10, codes_build_min_changes=1,
                            child_build=ChildBuildOptions(nice=0, retry_s=3600), payload_indexes_on_disk=indexes_on_disk)
    store.ensure_collection()
    return store


def median_ms(work, count: int = 100) -> float:
    times = []
    for n in range(count):
        started = time.perf_counter()
        work(n)
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 2)


def measure(directory: str, points: int, placement: str, texts: list[str]) -> dict:
    path = f"{directory}/{placement}/shard"
    build_shard(path, points, placement == "disk", texts)
    opened = subprocess.run([sys.executable, "-c", OPEN_SCRIPT, path, str(DIMS)], capture_output=True, text=True, check=True)
    row = {"payload_indexes": placement, "points": points, **json.loads(opened.stdout.strip().splitlines()[-1])}
    store = open_store(path, points, placement == "disk")
    queries = np.random.default_rng(2).standard_normal((100, DIMS)).astype(np.float32)
    tag = Scope(TagFilter(("chat:7",), "any", "exact"))
    row["search_plain_ms"] = median_ms(lambda n: store.search(VectorQuery(queries[n].tolist(), 50)))
    row["search_one_tag_ms"] = median_ms(lambda n: store.search(VectorQuery(queries[n].tolist(), 50, tag)))
    row["keyword_ms"] = median_ms(lambda n: store.text_search(f"{WORDS[n % 10]} {WORDS[(n * 3) % 10]}", Scope(), 50))
    store.close()
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.probe_edge_open", description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--payload-indexes", default="ram,disk", help="comma list: disk (EDGE_PAYLOAD_INDEXES_ON_DISK), ram")
    args = parser.parse_args(argv)
    texts = corpus()
    rows = []
    with tempfile.TemporaryDirectory(prefix="mempipe-edge-open-") as directory:
        for placement in args.payload_indexes.split(","):
            rows.append(measure(directory, args.points, placement, texts))
            print(json.dumps(rows[-1]), flush=True)
    columns = ["payload_indexes", "points", "open_ms", "close_ms", "heap_mb", "mapped_mb", "search_plain_ms",
               "search_one_tag_ms", "keyword_ms"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row[c]) for c in columns) + " |")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "probe_edge_open.json").write_text(json.dumps({"points": args.points, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
