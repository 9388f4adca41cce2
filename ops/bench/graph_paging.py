"""Graph paging benchmark: does one page cost the same at any store size?

Loads N memory nodes (ids in random order, as uuids arrive) into a real FalkorDB, then walks
the whole graph with maintenance's keyset pages (``graph_ops.page_memories``) and times every
page; and times a few pages of the query it replaced (``WHERE m.id > $after ORDER BY m.id
LIMIT n``) at the start, middle and end of the walk.

    python -m ops.bench.graph_paging [--sizes 10000,30000,100000] [--page 500]

Prints a table and writes JSON to ops/bench/results/bench_graph_paging.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import orjson
from falkordb import FalkorDB

from ops.redis_servers import RedisServer, free_port
from pipeline.graph import GraphStore
from pipeline.maintenance import graph_ops

RESULTS = Path(__file__).resolve().parent / "results"
OLD_QUERY = "MATCH (m:Memory) WHERE m.id > $after RETURN m ORDER BY m.id LIMIT $limit"


def load(graph: GraphStore, count: int, batch: int = 5000) -> list[str]:
    ids = [str(uuid.uuid4()) for _ in range(count)]
    for start in range(0, count, batch):
        graph.run_write(
            "UNWIND $ids AS id CREATE (:Memory {id: id, content: 'benchmark memory ' + id, tags: ['a', 'b'], "
            "importance: 0.5, confidence: 0.6, type: 'Context', timestamp: '2026-01-01T00:00:00+00:00'})",
            {"ids": ids[start : start + batch]},
        )
    return sorted(ids)


def measure(graph: GraphStore, ids: list[str], page: int) -> dict:
    times, cursor, seen = [], None, 0
    while True:
        started = time.perf_counter()
        memories, cursor = graph_ops.page_memories(graph, cursor, page)
        times.append((time.perf_counter() - started) * 1000)
        seen += len(memories)
        if cursor is None:
            break
    old = {}
    for label, fraction in (("first", 0.0), ("middle", 0.5), ("last", 0.99)):
        after = ids[int(fraction * len(ids)) - 1] if fraction else ""
        started = time.perf_counter()
        graph.run_read(OLD_QUERY, {"after": after, "limit": page})
        old[label] = round((time.perf_counter() - started) * 1000, 1)
    thirds = [times[i * len(times) // 3 : (i + 1) * len(times) // 3] for i in range(3)]
    return {
        "memories": len(ids), "seen": seen, "pages": len(times), "walk_s": round(sum(times) / 1000, 2),
        "page_ms_p50": round(statistics.median(times), 1), "page_ms_p95": round(sorted(times)[int(len(times) * 0.95)], 1),
        "page_ms_by_third": [round(statistics.median(t), 1) for t in thirds if t],
        "old_query_page_ms": old,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.graph_paging")
    parser.add_argument("--sizes", default="10000,30000,100000")
    parser.add_argument("--page", type=int, default=500)
    args = parser.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="mempipe-bench-paging-"))
    server = RedisServer("graph", free_port(), base, with_falkordb=True)
    server.start()
    rows = []
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            graph = GraphStore(FalkorDB(port=server.port), f"paging_{size}")
            graph.ensure_schema()
            ids = load(graph, size)
            rows.append(measure(graph, ids, args.page))
            graph.run_write("MATCH (m:Memory) DELETE m")
    finally:
        server.stop()
    report = {"page_size": args.page, "load_average": os.getloadavg(), "rows": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_graph_paging.json").write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    print(f"page {args.page}, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("| memories | pages | walk (s) | keyset page p50 / p95 (ms) | p50 by third of the walk | old query first / middle / last page (ms) |")
    print("|---|---:|---:|---|---|---|")
    for r in rows:
        old = r["old_query_page_ms"]
        print(f"| {r['memories']} | {r['pages']} | {r['walk_s']} | {r['page_ms_p50']} / {r['page_ms_p95']} | "
              f"{' / '.join(str(x) for x in r['page_ms_by_third'])} | {old['first']} / {old['middle']} / {old['last']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
