"""Where one recall's time goes, stage by stage, against a store ``bench_recall --store`` built.

    python -m ops.bench.profile_recall --store DIR [--size 10000] [--queries 100] [--cprofile | --ab]

Runs the engine in this process (no HTTP) on the bench's four scenarios and times each
stage by wrapping it: the vector search, the graph round trips (metadata sidecar, keyword
fill, supersession, relation hydration, expansion), scoring, result shaping, the access hook
and the JSON encoding of the response. Stages nest (expansion includes its own vector
searches), so the columns need not add up to the total. ``--cprofile`` prints the top
functions by cumulative time instead.

``--ab`` compares, request by request (rotating, so both see the same machine load): *before*
(the ``last_accessed`` message sent on the request path, as with ``RECALL_ACCESS_FLUSH_MS=0``)
and *batched* (access batched, the default). Ratios are to *before*.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import os
import pstats
import random
import statistics
import time
from collections import defaultdict
from pathlib import Path

import orjson

from ops.bench.recall import SCENARIOS, make_records, vocabulary
from pipeline.config import Settings
from pipeline.embedding import HashEmbedder
from ops.bench.stack import Servers

TIMES: dict[str, list[float]] = defaultdict(list)


def timed(name: str, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        began = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            TIMES[name].append((time.perf_counter() - began) * 1000)
    return wrapper


def instrument() -> None:
    """Wrap the stages where the modules look them up (module globals and class attributes)."""
    import pipeline.query.engine as engine
    import pipeline.query.search as search
    from pipeline.query.candidates import CandidateSources

    for name in ("vector", "metadata", "keyword", "by_ids", "tagged", "query_vector"):
        setattr(CandidateSources, name, timed(f"sources.{name}", getattr(CandidateSources, name)))
    for name in ("replacements", "chained_pairs"):
        if hasattr(search, name):
            setattr(search, name, timed(f"graph.{name}", getattr(search, name)))
    for name in ("expand_relations", "expand_entities", "result_entry", "contradictions", "named_entities"):
        if hasattr(engine, name):
            setattr(engine, name, timed(f"engine.{name}", getattr(engine, name)))
    search.QuerySearch.score = timed("score", search.QuerySearch.score)
    from pipeline.query.lexical import PoolBM25
    PoolBM25.scores = timed("score.pool_bm25", PoolBM25.scores)
    search.QuerySearch._gather = timed("gather", search.QuerySearch._gather)
    search.QuerySearch.apply_state = timed("apply_state", search.QuerySearch.apply_state)
    for name in ("_hydrate", "_record_access", "_diagnose"):
        if hasattr(engine.RecallEngine, name):
            setattr(engine.RecallEngine, name, timed(f"engine.{name}", getattr(engine.RecallEngine, name)))


def request_for(settings, RecallRequest, TagFilter, ExpansionOptions, ContextHints):
    def request(text, vector, project, extra):
        return RecallRequest(
            query=text, queries=(), embedding=vector, limit=10, per_query_limit=None, auto_decompose=False,
            tag_filter=TagFilter(tags=(project,) if "tags" in extra else ()), exclude_tags=(), time_query=None,
            start=None, end=None, sort=None, state_mode="current", state_debug=False,
            recency_bias=settings.recall_recency_bias, scope_fallback=False, min_score=settings.recall_min_score,
            adaptive_floor=settings.recall_adaptive_floor,
            expansion=ExpansionOptions(relations="expand_relations" in extra, entities="expand_entities" in extra,
                                       relation_limit=settings.recall_relation_limit,
                                       expansion_limit=settings.recall_expansion_limit, min_importance=0.0,
                                       min_strength=0.0, respect_tags=False),
            context=ContextHints(None, None, None, (), (), ()),
        )
    return request


def compare(settings, services, plans, RecallEngine, request) -> None:
    """Rotate requests between the three engines; latencies under the same load."""
    from datetime import datetime, timezone

    from api.access import AccessBatcher
    from api.app import _actor_enqueuers

    send = _actor_enqueuers(services).access  # the real maintenance message, to this store's broker
    batcher = AccessBatcher(send, settings.recall_access_flush_ms / 1000)
    batcher.start()
    now = lambda: datetime.now(timezone.utc).isoformat()  # noqa: E731
    engines = {
        "before": RecallEngine(settings,
                               graph=lambda: services.graph, vectors=lambda: services.vectors,
                               embedder=lambda: services.embedder, on_access=lambda ids: send(ids, now()),
                               dimensions=lambda: services.vector_size),
        "batched": RecallEngine(settings,
                                graph=lambda: services.graph, vectors=lambda: services.vectors,
                                embedder=lambda: services.embedder, on_access=lambda ids: batcher.record(ids, now()),
                                dimensions=lambda: services.vector_size),
    }
    try:
        for name, extra in SCENARIOS.items():
            times: dict[str, list[float]] = {variant: [] for variant in engines}
            for i, (text, vector, project) in enumerate(plans + plans[:10]):
                order = list(engines)[i % len(engines):] + list(engines)[:i % len(engines)]  # rotate who goes first
                for variant in order:
                    began = time.perf_counter()
                    orjson.dumps(engines[variant].recall(request(text, vector, project, extra)))
                    if i >= 10:  # the first ten warm up
                        times[variant].append((time.perf_counter() - began) * 1000)
            pct = lambda xs, q: sorted(xs)[min(len(xs) - 1, round(q / 100 * (len(xs) - 1)))]  # noqa: E731
            base = pct(times["before"], 50)
            print(f"{name:<20} " + " | ".join(f"{v} p50 {pct(x, 50):6.2f} p95 {pct(x, 95):6.2f} ({pct(x, 50) / base:.2f})"
                                              for v, x in times.items())
                  + f"  (load average {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        batcher.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cprofile", action="store_true")
    parser.add_argument("--sort", default="cumulative", choices=("cumulative", "tottime"),
                        help="with --cprofile: order the functions by this")
    parser.add_argument("--scenario", action="append", choices=tuple(SCENARIOS), help="only these (repeatable)")
    parser.add_argument("--ab", action="store_true")
    args = parser.parse_args()
    base = Path(args.store) / str(args.size)
    if not (base / "manifest.json").exists():
        raise SystemExit(f"no store in {base}: build it with python -m ops.bench.recall --store {args.store}")
    words = vocabulary(random.Random(args.seed))
    records = make_records(random.Random(f"records-{args.seed}-{args.size}"), words, 0, args.size)
    rng = random.Random(f"queries-{args.seed}")
    embedder = HashEmbedder()
    plans = []
    for record in (rng.choice(records) for _ in range(args.queries)):
        text = " ".join(rng.sample(record.content.split(), 4))
        plans.append((text, embedder.embed([text])[0], record.tags[0]))

    servers = Servers.start(base / "servers", timeout=180.0)
    try:
        os.environ.update({
            "FALKORDB_HOST": "127.0.0.1", "FALKORDB_PORT": str(servers.graph.port),
            "FALKORDB_GRAPH": f"memories_bench{args.size}", "MEMPIPE_DATA_DIR": str(base / "stack"),
            "REDIS_URL": f"redis://127.0.0.1:{servers.broker.port}/1", "EMBEDDING_PROVIDER": "hash",
        })
        from api.routes.recall import parse_recall  # noqa: F401  (imported for parity with the web)
        from pipeline.query import ContextHints, ExpansionOptions, RecallEngine, RecallRequest
        from pipeline.graph import TagFilter
        from pipeline.services import Services

        settings = Settings()
        services = Services(settings)
        if args.ab:
            return compare(settings, services, plans, RecallEngine, request_for(settings, RecallRequest, TagFilter,
                                                                             ExpansionOptions, ContextHints))
        if not args.cprofile:
            instrument()
        engine = RecallEngine(settings, graph=lambda: services.graph, vectors=lambda: services.vectors,
                              embedder=lambda: services.embedder, on_access=lambda ids: None,
                              dimensions=lambda: services.vector_size)

        request = request_for(settings, RecallRequest, TagFilter, ExpansionOptions, ContextHints)

        for name, extra in SCENARIOS.items():
            if args.scenario and name not in args.scenario:
                continue
            for text, vector, project in plans[:10]:  # warm-up
                engine.recall(request(text, vector, project, extra))
            TIMES.clear()
            profiler = cProfile.Profile() if args.cprofile else None
            totals = []
            for text, vector, project in plans:
                req = request(text, vector, project, extra)
                began = time.perf_counter()
                if profiler:
                    profiler.enable()
                body = engine.recall(req)
                encoded = time.perf_counter()
                orjson.dumps(body)
                if profiler:
                    profiler.disable()
                TIMES["orjson.dumps"].append((time.perf_counter() - encoded) * 1000)
                totals.append((time.perf_counter() - began) * 1000)
            print(f"\n== {name}: total p50 {statistics.median(totals):.2f} ms, mean {statistics.fmean(totals):.2f} ms "
                  f"(load average {os.getloadavg()[0]:.1f})")
            if profiler:
                pstats.Stats(profiler).sort_stats(args.sort).print_stats(30)
                continue
            for stage, values in sorted(TIMES.items(), key=lambda kv: -sum(kv[1])):
                per_request = sum(values) / len(totals)
                print(f"  {stage:<28} {per_request:7.2f} ms/request  ({len(values) / len(totals):.1f} calls, "
                      f"p50 {statistics.median(values):.2f} ms/call)")
    finally:
        servers.stop()


if __name__ == "__main__":
    main()
