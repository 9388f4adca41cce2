"""What /health's two memory counts cost at a size: the scan they were, the counters they are.

    python -m ops.bench.probe_health_count --memories 200000

Builds a FalkorDB graph (a redis-server of its own) and a Qdrant Edge shard with ``--memories``
memories, one in 1,000 a MetaPattern (the type /health leaves out), and times each count the
way it was (a filter over every node or point) and the way ``GraphStore.count_memories`` and
``EdgeVectorStore.count_memories`` take it now (the label's or the shard's count less the
excluded type's, from its index). Best and median of ``--repeat`` calls, idle; both ways must
give the same number. Prints a table and writes ``ops/bench/results/probe_health_count.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from falkordb import FalkorDB

from ops.bench.stack import Servers
from pipeline.graph import GraphStore
from pipeline.vectors import EdgeVectorStore, VectorPoint, vector_payload

RESULTS = Path(__file__).resolve().parent / "results"
EXCLUDED = frozenset({"MetaPattern"})
DIMS = 384


def timed(call, repeat: int) -> dict:
    times, value = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        value = call()
        times.append((time.perf_counter() - started) * 1000)
    return {"count": value, "best_ms": round(min(times), 2), "median_ms": round(statistics.median(times), 2)}


def kind(i: int) -> str:
    return "MetaPattern" if i % 1000 == 0 else "Context"


def graph_counts(servers: Servers, memories: int, repeat: int) -> dict:
    client = FalkorDB(host="127.0.0.1", port=servers.graph.port)
    store = GraphStore(client, "health_count")
    store.ensure_schema()
    raw = client.select_graph("health_count")
    for start in range(0, memories, 20000):
        ids = list(range(start, min(memories, start + 20000)))
        raw.query("UNWIND $rows AS row CREATE (:Memory {id: row[0], type: row[1], content: 'x'})",
                  {"rows": [[f"m{i}", kind(i)] for i in ids]})
    scan = "MATCH (m:Memory) WHERE NOT coalesce(m.type, '') IN $excluded RETURN count(m)"
    return {"scan": timed(lambda: raw.query(scan, {"excluded": sorted(EXCLUDED)}).result_set[0][0], repeat),
            "counters": timed(lambda: store.count_memories(EXCLUDED), repeat)}


def edge_counts(path: Path, memories: int, repeat: int) -> dict:
    store = EdgeVectorStore(str(path), DIMS, plain_max_points=memories + 1)
    store.ensure_collection()
    rng = np.random.default_rng(7)
    for start in range(0, memories, 5000):
        ids = range(start, min(memories, start + 5000))
        vectors = rng.standard_normal((len(ids), DIMS)).astype("float32")
        store.upsert([VectorPoint(f"m{i}", vectors[n].tolist(),
                                  vector_payload({"id": f"m{i}", "content": "x", "tags": ["t"], "type": kind(i),
                                                  "importance": 0.5, "timestamp": "2026-01-01T00:00:00+00:00"}))
                      for n, i in enumerate(ids)])
    store.persist()
    qe = store._qe
    flt = qe.Filter(must_not=[qe.FieldCondition(key="type", match=qe.MatchAny(sorted(EXCLUDED)))])
    try:
        return {"scan": timed(lambda: int(store._shard.count(qe.CountRequest(exact=True, filter=flt))), repeat),
                "counters": timed(lambda: store.count_memories(EXCLUDED), repeat)}
    finally:
        store.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.probe_health_count", description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=200000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--out", type=Path, default=RESULTS / "probe_health_count.json")
    args = parser.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="probe-health-count-"))
    servers = Servers.start(base)
    try:
        report = {"memories": args.memories, "repeat": args.repeat,
                  "graph": graph_counts(servers, args.memories, args.repeat),
                  "edge": edge_counts(base / "shard", args.memories, args.repeat)}
    finally:
        servers.stop()
    report["agree"] = all(report[s]["scan"]["count"] == report[s]["counters"]["count"] for s in ("graph", "edge"))
    print("| store | scan best / median ms | counters best / median ms | count |")
    print("|---|---|---|---|")
    for store in ("graph", "edge"):
        scan, counters = report[store]["scan"], report[store]["counters"]
        print(f"| {store} | {scan['best_ms']} / {scan['median_ms']} | {counters['best_ms']} / {counters['median_ms']} "
              f"| {counters['count']:,} |")
    print(f"both ways agree: {report['agree']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0 if report["agree"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
