"""The neighbour read's query plan and cost: the filter inside the MATCH against after a WITH.

    python -m ops.bench.probe_neighbour_read [--memories 10000] [--pool 100] [--runs 20]

Builds a graph of ``--memories`` Memory nodes chained by PRECEDED_BY into 40-turn
conversations (in a throwaway FalkorDB server), picks a pool of random ids plus a few turns
that are one and two steps apart, and times each form of the read over that pool, printing
FalkorDB's plan for it. With ``b.id IN $ids`` inside the MATCH, FalkorDB plans an index scan of
the id list for every unwound id; after a ``WITH`` it follows the edges out of ``a``.
Prints a table and writes ops/bench/results/probe_neighbour_read.json.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from falkordb import FalkorDB

from pipeline.graph import GraphStore
from pipeline.query import neighbours
from ops.bench.stack import Servers

RESULTS = Path(__file__).resolve().parent / "results"
TURNS = 40
FORMS = {
    "adjacent, filter in MATCH (before)": (
        "UNWIND $ids AS id MATCH (a:Memory {id: id})-[:PRECEDED_BY]->(b:Memory) "
        "WHERE b.id IN $ids RETURN DISTINCT a.id, b.id"),
    "two apart, filter in MATCH (before)": (
        "UNWIND $ids AS id MATCH (a:Memory {id: id})-[:PRECEDED_BY]->(:Memory)-[:PRECEDED_BY]->(b:Memory) "
        "WHERE b.id IN $ids RETURN DISTINCT a.id, b.id"),
    "one step, filter after WITH": neighbours._ONE_STEP,
    "one and two steps, filter after WITH": neighbours._UP_TO_TWO_STEPS,
    "the same + the members without an edge (WHERE NOT, UNION ALL)": (
        "UNWIND $ids AS id MATCH p = (a:Memory {id: id})-[:PRECEDED_BY*1..2]->(b:Memory) "
        "WITH a, b, length(p) AS steps WHERE b.id IN $ids RETURN DISTINCT a.id AS x, b.id AS y, steps AS z "
        "UNION ALL UNWIND $ids AS id MATCH (m:Memory {id: id}) WHERE NOT (m)-[:PRECEDED_BY]-() "
        "RETURN m.id AS x, m.arrival AS y, -1 AS z"),
    "the same + every member's arrival (UNION ALL, shipped)": neighbours._CHAINED_AND_ARRIVALS % 2,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--pool", type=int, default=100)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    servers = Servers.start(Path(tempfile.mkdtemp(prefix="mempipe-probe-")))
    try:
        db = FalkorDB(host="127.0.0.1", port=servers.graph.port)
        store = GraphStore(db, "probe")
        store.ensure_schema()
        ids = [f"m{i}" for i in range(args.memories)]
        for offset in range(0, len(ids), 2000):
            store._query("UNWIND $rows AS id CREATE (:Memory {id: id})", {"rows": ids[offset: offset + 2000]})
        links = [[ids[i], ids[i - 1], f"conversation:c{i // TURNS}"] for i in range(1, len(ids)) if i % TURNS]
        store._query("UNWIND $rows AS r MATCH (a:Memory {id: r[0]}), (b:Memory {id: r[1]}) "
                     "CREATE (a)-[:PRECEDED_BY {scope: r[2]}]->(b)", {"rows": links})
        pool = random.Random(1).sample(ids, args.pool) + ids[41:43] + ids[44:46] + ids[47:48]
        graph = db.select_graph("probe")
        rows = []
        for name, query in FORMS.items():
            plan = [line.strip() for line in graph.explain(query, {"ids": pool}).plan]
            graph.ro_query(query, {"ids": pool})  # warm
            began = time.perf_counter()
            for _ in range(args.runs):
                found = graph.ro_query(query, {"ids": pool}).result_set
            rows.append({"form": name, "ms": round((time.perf_counter() - began) / args.runs * 1000, 2),
                         "rows": len(found), "plan": plan})
    finally:
        servers.stop()
    print(f"{args.memories} memories in {TURNS}-turn chains, pool of {len(pool)} ids, {args.runs} runs each\n")
    print(f"{'form':<50} {'ms':>7} {'rows':>5}  plan (innermost last)")
    for row in rows:
        print(f"{row['form']:<50} {row['ms']:>7.2f} {row['rows']:>5}  {' < '.join(row['plan'][1:])}")
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "probe_neighbour_read.json"
    path.write_text(json.dumps({"memories": args.memories, "pool": len(pool), "runs": args.runs, "rows": rows}, indent=2))
    print(f"\nwritten {path}")


if __name__ == "__main__":
    main()
