"""Recall latency at 10k and 100k memories in the embedded default (Qdrant Edge + FalkorDB).

    python -m ops.bench.recall [--sizes 10000,100000] [--queries 200] [--store DIR] [--out FILE]

The loader writes straight to the stores through their batch methods (one UNWIND per batch
in FalkorDB, multi-point upserts into the Edge shard, then ``optimize()``), because the
subject here is recall, not ingestion. Then a real web process (uvicorn, as deployed) answers
``GET /recall`` over HTTP, one request at a time, with the hash provider's embedding passed
in. Every memory is a turn of a 40-turn conversation chained by ``PRECEDED_BY``, as
enrichment chains a scope. Four scenarios: (a) plain, (b) tag-scoped, (c) expand_relations (~3 edges per memory),
(d) expand_entities. Server-side ``query_time_ms`` and client-side latency, p50/p95/p99.
Prints a table, the largest ÷ smallest size ratios, and writes ops/bench/results/bench_recall.json.
Each scenario also reports the CPU the web process and the graph server spent per recall
(``/proc``), which a shared machine's load disturbs far less than wall-clock latency.

``--variant 'NAME=VALUE …'`` (repeatable) measures each size again with the web process
restarted with those settings, over the same stores, in the same run: the first variant's
figures (or the defaults') are ``results``, every variant's are under ``variants``.

``--named-queries`` capitalises each query's second word, so the engine reads it as a name: a
recall that names someone also runs the topic search (``RECALL_KEYWORD_TOPIC_PER_RESULT``). The
embedding is passed in either way, so the query's second text is never embedded here.

``--plain-first`` measures every variant twice in the same run, over the same stores: on the
shard as loaded (never built: plain segments, each search a scan, as the web keeps a shard up
to ``EDGE_PLAIN_MAX_POINTS``), then after ``optimize()`` (HNSW); labels end in ``[plain]`` and
``[built]``. Not with a kept store (``--store`` keeps it built).

``--store DIR`` keeps each size's stores (both redis-servers' AOF files, the Edge shard with
its built index) under ``DIR/<size>/`` and reuses them on the next run with the same seed:
building 100k takes minutes (the HNSW index most of it); measuring takes seconds. Delete the
directory to rebuild. Without it, the stores live in temporary directories.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import random
import statistics
import tempfile
import time
import urllib.parse
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson
from falkordb import FalkorDB

from ops.bench.suite.procs import cpu_seconds
from pipeline.embedding import HashEmbedder
from pipeline.graph import GraphStore
from pipeline.records import MemoryRecord
from pipeline.vectors import EdgeVectorStore, VectorPoint, vector_payload
from ops.bench.stack import AUTH, Servers, Stack

RESULTS = Path(__file__).resolve().parent / "results"
PROJECTS = 50
PEOPLE = 400
# Every memory belongs to a conversation of this many turns, chained by PRECEDED_BY in timestamp
# order as enrichment chains a scope, so the neighbour reads of recall walk real chains.
CONVERSATION_TURNS = 40
STORE_LAYOUT = 2  # bumped when the loader changes what a kept store holds (2: conversation chains)
EDGES_PER_MEMORY = 3
BATCH = 2000
EDGE_TYPES = ("RELATES_TO", "LEADS_TO", "PART_OF", "REINFORCES", "DERIVED_FROM")
SCENARIOS = {
    "a_plain": {},
    "b_tag_scoped": {"tags": "__project__"},
    "c_expand_relations": {"expand_relations": "true"},
    "d_expand_entities": {"expand_entities": "true"},
}


def vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(4, 9))))
    return sorted(words)


def make_records(rng: random.Random, words: list[str], start: int, count: int) -> list[MemoryRecord]:
    now = datetime.now(timezone.utc)
    records = []
    for i in range(start, start + count):
        people = rng.sample(range(PEOPLE), rng.choice((0, 1, 1, 2)))
        tags = [f"proj:p{i % PROJECTS}", f"topic:t{rng.randrange(200)}", f"conversation:c{i // CONVERSATION_TURNS}"]
        tags += [f"entity:people:person-{p}" for p in people]
        moment = (now - timedelta(days=rng.uniform(0, 365))).isoformat()
        records.append(MemoryRecord(
            id=str(uuid.UUID(int=rng.getrandbits(128))),
            content=" ".join(rng.choices(words, k=rng.randint(12, 30))),
            tags=tags, importance=round(rng.random(), 3), confidence=0.8, type="Context", type_source="explicit",
            timestamp=moment, updated_at=moment,
            metadata={"entities": {"people": [f"person {p}" for p in people]}} if people else {},
        ))
    return records


def load(graph: GraphStore, edge: EdgeVectorStore, records: list[MemoryRecord], all_ids: list[str],
         rng: random.Random, embedder: HashEmbedder) -> None:
    for offset in range(0, len(records), BATCH):
        batch = records[offset: offset + BATCH]
        graph.upsert_memories(batch)
        vectors = embedder.embed([r.content for r in batch])
        edge.upsert([VectorPoint(r.id, v, vector_payload(r.to_message())) for r, v in zip(batch, vectors)])
        by_type: dict[str, list[dict]] = {}
        for record in batch:
            for _ in range(EDGES_PER_MEMORY):
                by_type.setdefault(rng.choice(EDGE_TYPES), []).append(
                    {"a": record.id, "b": rng.choice(all_ids), "s": round(rng.random(), 3), "u": record.timestamp})
        for kind, rows in by_type.items():  # kind comes from the fixed EDGE_TYPES tuple
            graph._query(
                f"UNWIND $rows AS row MATCH (a:Memory {{id: row.a}}), (b:Memory {{id: row.b}}) "
                f"CREATE (a)-[:{kind} {{strength: row.s, updated_at: row.u}}]->(b)", {"rows": rows})
        graph._query(
            "UNWIND $rows AS row MATCH (a:Memory {id: row.a}), (b:Memory {id: row.b}) "
            "CREATE (a)-[:PRECEDED_BY {scope: row.scope, strength: 1.0, updated_at: row.u}]->(b)",
            {"rows": conversation_chains(batch)})


def conversation_chains(batch: list[MemoryRecord]) -> list[dict]:
    """PRECEDED_BY rows (later -> earlier) for the conversations wholly inside ``batch``."""
    scopes: dict[str, list[MemoryRecord]] = {}
    for record in batch:
        scopes.setdefault(next(t for t in record.tags if t.startswith("conversation:")), []).append(record)
    rows = []
    for scope, turns in scopes.items():
        turns.sort(key=lambda r: r.timestamp)
        rows += [{"a": later.id, "b": earlier.id, "scope": scope, "u": later.timestamp}
                 for earlier, later in zip(turns, turns[1:])]
    return rows


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def convert_edge_shard(path: Path, dimensions: int) -> float:
    """Bring a reused shard to the current settings (payload placement) before the web opens
    it, as the web's maintenance thread would at its next quiet moment. Returns seconds spent."""
    began = time.perf_counter()
    shard = EdgeVectorStore(str(path), dimensions, text_backfill=True)
    shard.ensure_collection()
    shard.maintain()  # the text repack and an index build, only where the shard needs them
    shard.close()
    return round(time.perf_counter() - began, 1)


def prime_page_cache(directory: Path) -> int:
    """Read the shard's files once, as a service that has been answering for a while has them.

    The payload storage is memory-mapped from disk: right after a reused store is opened, the
    first scenario would otherwise pay the page-ins that every later scenario is spared
    (measured: plain 15.5 ms p50 against 11.2 ms for expand_relations, which does the same
    search and more). Returns the bytes read.
    """
    total = 0
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                total += len(chunk)
    return total


def measure(stack: Stack, records: list[MemoryRecord], embedder: HashEmbedder, rng: random.Random, queries: int,
            graph_pid: int | None = None, named: bool = False) -> dict:
    picks = [rng.choice(records) for _ in range(queries)]
    plans = []
    for record in picks:
        words = rng.sample(record.content.split(), 4)
        if named:  # a capitalised word not opening the query reads as a name (pipeline/query/names.py)
            words[1] = words[1].capitalize()
        text = " ".join(words)
        vector = ",".join(f"{x:.5f}" for x in embedder.embed([text])[0])
        plans.append((text, vector, record.tags[0]))
    out = {}
    # The stdlib client on a kept-alive connection: httpx spent ~1.5 ms of CPU per request on
    # this 2-core machine (issue 6), CPU the measured service then lacks.
    connection = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=30)
    try:
        for name, extra in SCENARIOS.items():
            def run(plan):
                text, vector, project = plan
                params = {"query": text, "embedding": vector, "limit": 10}
                params |= {k: (project if v == "__project__" else v) for k, v in extra.items()}
                path = "/recall?" + urllib.parse.urlencode(params)
                began = time.perf_counter()  # from sending the request to the last byte of the answer
                connection.request("GET", path, headers=AUTH)
                response = connection.getresponse()
                payload = response.read()
                elapsed = (time.perf_counter() - began) * 1000
                assert response.status == 200, payload[:500]
                body = orjson.loads(payload)
                return elapsed, body["query_time_ms"], body["count"]
            for plan in plans[:20]:  # warm-up
                run(plan)
            cpu_before = cpu_seconds(stack.web.pid), cpu_seconds(graph_pid) if graph_pid else 0.0
            samples = [run(plan) for plan in plans]
            web_cpu = (cpu_seconds(stack.web.pid) - cpu_before[0]) * 1000 / len(plans)
            graph_cpu = ((cpu_seconds(graph_pid) - cpu_before[1]) * 1000 / len(plans)) if graph_pid else 0.0
            client_ms = [s[0] for s in samples]
            server_ms = [s[1] for s in samples]
            out[name] = {
                "server_p50": percentile(server_ms, 50), "server_p95": percentile(server_ms, 95),
                "server_p99": percentile(server_ms, 99), "client_p50": percentile(client_ms, 50),
                "client_p95": percentile(client_ms, 95), "client_p99": percentile(client_ms, 99),
                "mean_results": round(statistics.fmean(s[2] for s in samples), 2),
                "web_cpu_ms": round(web_cpu, 2), "graph_cpu_ms": round(graph_cpu, 2),
            }
    finally:
        connection.close()
    return out


def print_table(results: dict[int, dict], variant: str | None = None) -> None:
    header = (f"{'size':>7} {'scenario':<20} {'srv p50':>8} {'srv p95':>8} {'srv p99':>8} {'cli p50':>8} {'cli p95':>8} "
              f"{'cli p99':>8} {'web cpu':>8} {'fdb cpu':>8} {'results':>8}")
    if variant is not None:
        print(f"settings: {variant}")
    print(header)
    print("-" * len(header))
    for size, scenarios in results.items():
        for name, r in scenarios.items():
            print(f"{size:>7} {name:<20} {r['server_p50']:>8.2f} {r['server_p95']:>8.2f} {r['server_p99']:>8.2f} "
                  f"{r['client_p50']:>8.2f} {r['client_p95']:>8.2f} {r['client_p99']:>8.2f} "
                  f"{r.get('web_cpu_ms', 0):>8.2f} {r.get('graph_cpu_ms', 0):>8.2f} {r['mean_results']:>8}")
    print("(milliseconds; srv = query_time_ms reported by the engine, cli = HTTP round trip; "
          "web/fdb cpu = CPU per recall of the web process / the FalkorDB server)")


def build(stack: Stack, graph: GraphStore, records: list[MemoryRecord], seed: int, embedder: HashEmbedder,
          index: bool = True) -> dict:
    began = time.perf_counter()
    edge = EdgeVectorStore(str(stack.data_dir / "qdrant-edge" / "memories"), embedder.dimensions)
    edge.ensure_collection()
    load(graph, edge, records, [r.id for r in records], random.Random(f"edges-{seed}-{len(records)}"), embedder)
    loaded = time.perf_counter()
    if index:
        edge._shard.optimize()  # build the HNSW index before serving, as the web process does off-path
    edge.close()
    optimized = time.perf_counter()
    return {"load_s": round(loaded - began, 1), "optimize_s": round(optimized - loaded, 1) if index else None}


def build_index(path: Path, dimensions: int) -> float:
    """``optimize()`` a plain shard (the web stopped); returns seconds spent."""
    began = time.perf_counter()
    edge = EdgeVectorStore(str(path), dimensions)
    edge.ensure_collection()
    edge._shard.optimize()
    edge.close()
    return round(time.perf_counter() - began, 1)


def compact_aof(port: int, timeout: float = 600) -> None:
    """Rewrite the graph server's AOF into one RDB base: replaying 100k ``UNWIND`` writes at the
    next start would take far longer than loading the snapshot."""
    import redis

    client = redis.Redis(host="127.0.0.1", port=port)
    client.bgrewriteaof()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = client.info("persistence")
        if not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]:
            return
        time.sleep(0.5)
    raise RuntimeError("AOF rewrite did not finish")


def run_size(size: int, args, words: list[str], embedder: HashEmbedder,
             variants: list[tuple[str, dict[str, str]]]) -> tuple[dict[str, dict], dict]:
    """Build (or reuse) one size's stores, serve them from a real web process, measure."""
    records = make_records(random.Random(f"records-{args.seed}-{size}"), words, 0, size)
    base = Path(args.store) / str(size) if args.store else Path(tempfile.mkdtemp(prefix=f"mempipe-bench-{size}-"))
    manifest = base / "manifest.json"
    kept = json.loads(manifest.read_text()) if manifest.exists() else {}
    reuse = kept.get("seed") == args.seed and kept.get("layout") == STORE_LAYOUT
    if manifest.exists() and not reuse:
        raise SystemExit(f"{base} holds a store built with another seed or loader; delete it to rebuild")
    servers = Servers.start(base / "servers", timeout=180.0)  # a reused store loads its graph first
    data_dir = base / "stack"
    data_dir.mkdir(parents=True, exist_ok=True)
    stack = Stack(servers.broker.port, servers.graph.port, data_dir, f"bench{size}", 1,
                  extra_env={"EDGE_OPTIMIZE_INTERVAL_S": "3600"})
    try:
        if reuse:
            timing = json.loads(manifest.read_text())["build"] | {"reused": True}
            print(f"{size} memories: reusing the stores in {base}", flush=True)
            timing["converted_s"] = convert_edge_shard(data_dir / "qdrant-edge" / "memories", embedder.dimensions)
        else:
            graph = GraphStore(FalkorDB(host="127.0.0.1", port=stack.graph_port), f"memories_{stack.name}")
            graph.ensure_schema()
            timing = build(stack, graph, records, args.seed, embedder, index=not args.plain_first)
            if args.store:
                compact_aof(stack.graph_port)
                manifest.write_text(json.dumps({"seed": args.seed, "layout": STORE_LAYOUT, "size": size, "build": timing}))
            print(f"{size} memories: loaded in {timing['load_s']} s, index built in {timing['optimize_s']} s", flush=True)
        base_env = dict(stack.extra_env)
        result = {}
        for phase in ("plain", "built") if args.plain_first else ("",):
            if phase == "built":
                timing["optimize_s"] = build_index(data_dir / "qdrant-edge" / "memories", embedder.dimensions)
                print(f"{size} memories: index built in {timing['optimize_s']} s", flush=True)
            for label, settings in variants:  # one web process per variant, over the same stores
                stack.extra_env = {**base_env, **settings}
                stack.start_web(timeout=300)
                primed = prime_page_cache(data_dir / "qdrant-edge")
                print(f"{size} memories: {primed / 2**20:.0f} MiB of Edge shard files read into the page cache", flush=True)
                result[f"{label} [{phase}]" if phase else label] = measure(
                    stack, records, embedder, random.Random(f"queries-{args.seed}"), args.queries,
                    servers.graph.process.pid, args.named_queries)
                stack.web.terminate()
                stack.web.wait(30)
    finally:
        stack.stop()
        servers.stop()
    return result, timing


def ratios(results: dict[int, dict]) -> dict[str, dict[str, float]]:
    """Largest size ÷ smallest size, per scenario and percentile (how latency grows with the store)."""
    if len(results) < 2:
        return {}
    small, large = results[min(results)], results[max(results)]
    return {name: {k: round(large[name][k] / small[name][k], 2) for k in large[name] if k.startswith(("server", "client"))
                   and small[name][k]} for name in large}


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--store", help="keep each size's stores under DIR/<size>/ and reuse them on later runs")
    parser.add_argument("--variant", action="append", default=[], metavar="'NAME=VALUE …'",
                        help="measure again with the web process restarted with these settings (repeatable; "
                             "the first is reported as results)")
    parser.add_argument("--named-queries", action="store_true",
                        help="each query's second word capitalised, so the engine reads it as a name (the "
                             "nameless query form and RECALL_KEYWORD_TOPIC_PER_RESULT's topic search apply)")
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_recall.json",
                        help="where the JSON goes (the default is the committed file the report renders)")
    parser.add_argument("--plain-first", action="store_true",
                        help="measure on the never-built shard, then build the index and measure again")
    args = parser.parse_args()
    if args.plain_first and args.store:
        parser.error("--plain-first needs fresh stores (a kept store is built)")
    variants = [(v.strip() or "(defaults)", dict(item.split("=", 1) for item in v.split())) for v in args.variant]
    variants = variants or [("(defaults)", {})]
    sizes = sorted(int(s) for s in args.sizes.split(","))
    words = vocabulary(random.Random(args.seed))
    embedder = HashEmbedder()
    by_variant: dict[str, dict[int, dict]] = {}
    timings: dict[int, dict] = {}
    loads: dict[int, dict] = {}
    for size in sizes:
        before = load_average()
        measured, timings[size] = run_size(size, args, words, embedder, variants)
        loads[size] = {"before": before, "after": load_average()}
        for label, result in measured.items():
            by_variant.setdefault(label, {})[size] = result
            print_table({size: result}, label)  # as it goes: the larger size takes minutes to build
        print(f"load average before/after: {before} / {loads[size]['after']}\n", flush=True)
    results = next(iter(by_variant.values()))
    print()
    for label in by_variant:
        print_table(by_variant[label], label)
        print()
    growth = ratios(results)
    if growth:
        print(f"\n{max(sizes)} ÷ {min(sizes)}:")
        for name, r in growth.items():
            print(f"  {name:<20} " + "  ".join(f"{k} {v:.2f}×" for k, v in r.items()))
    path = args.out
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps({
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "queries_per_scenario": args.queries, "load": timings, "load_average": loads, "results": results,
        "ratio_largest_to_smallest": growth,
        "variants": {key: {"settings": settings, "results": by_variant[key], "ratio_largest_to_smallest":
                             ratios(by_variant[key])}
                     for label, settings in variants for key in by_variant if key.split(" [")[0] == label},
    }, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    print(f"\nwritten {path}")


if __name__ == "__main__":
    main()
