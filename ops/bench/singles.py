"""Single writes alone: the quick loop for work on the ``POST /memory`` path.

    python -m ops.bench.singles [--writes 3000] [--workers 1,2] [--repeat 2] [--variant K=V,K=V ...]

Each run starts a fresh stack (real redis-server + FalkorDB, uvicorn web owning Qdrant Edge,
Dramatiq workers; no index build during it), sends ``--writes`` single
``POST /memory?wait=false`` from 8 keep-alive ``http.client`` connections (as
``ops.bench.ingest``'s single phase), and waits until all are recallable. Per run: the rate,
CPU ms per memory of each part, and how many vector-stage messages the writes became (the web's
``dramatiq_messages_total`` for ``index_vectors``): per-message work is most of a single
write's cost, so the batch size that reaches each stage matters. Worker counts alternate
(``--repeat`` rounds of ``--workers``) so a changing load hits every setting alike; to compare
two versions of the code, run it from each tree in turn. Prints a table and writes
``ops/bench/results/bench_singles.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from ops.bench.ingest import RESULTS, bench_singles
from ops.bench.stack import Servers, Stack


def vector_messages(metrics_text: str) -> float:
    """Messages the web's vector stage has processed (Prometheus exposition text)."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics_text.splitlines()
               if line.startswith("dramatiq_messages_total") and 'actor_name="index_vectors"' in line)


def parse_variant(text: str) -> dict[str, str]:
    """``"A=1,B=2"`` → ``{"A": "1", "B": "2"}``; ``""`` → the defaults."""
    pairs = [item.split("=", 1) for item in text.split(",") if item.strip()]
    if any(len(pair) != 2 or not pair[0].strip() for pair in pairs):
        raise ValueError(f"a variant is a comma list of NAME=value, got {text!r}")
    return {name.strip().upper(): value.strip() for name, value in pairs}


def run_once(servers: Servers, writes: int, workers: int, concurrency: int, variant: str = "") -> dict:
    # No index build inside the run: the hour-long interval keeps Edge from starting one.
    stack = Stack.create(servers, **{"EMBEDDING_PROVIDER": "hash", "EDGE_OPTIMIZE_INTERVAL_S": "3600",
                                     **parse_variant(variant)})
    try:
        stack.start_web(timeout=120)
        stack.start_worker(processes=workers, threads=2)
        with stack.client() as api:
            api.post("/memory", json={"content": "warm-up"})
            before = vector_messages(api.get("/metrics").text)
        result = bench_singles(stack, writes, concurrency, 600, servers)
        with stack.client() as api:
            messages = vector_messages(api.get("/metrics").text) - before
        accepted = writes - result["refused"]
        return {"variant": variant, "workers": workers, "load": round(os.getloadavg()[0], 1), **result,
                "vector_messages": int(messages), "memories_per_vector_message": round(accepted / max(messages, 1), 1)}
    finally:
        stack.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.singles", description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=3000)
    parser.add_argument("--workers", default="1", help="worker process counts, comma list (alternated)")
    parser.add_argument("--repeat", type=int, default=2, help="rounds over the worker counts")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--variant", action="append", help="settings for the stack, NAME=value,... ('' = defaults); "
                                                            "repeat to compare several")
    args = parser.parse_args(argv)
    variants = args.variant or [""]
    for variant in variants:
        parse_variant(variant)  # refuse a malformed one before any run
    servers = Servers.start(Path(tempfile.mkdtemp(prefix="mempipe-singles-")) / "servers")
    runs = []
    try:
        for _ in range(args.repeat):
            for workers in (int(w) for w in args.workers.split(",") if w):
                for variant in variants:
                    runs.append(run_once(servers, args.writes, workers, args.concurrency, variant))
                    print(f"... {workers} worker(s) {variant or 'defaults'}: {runs[-1]['rate']}/s", file=sys.stderr, flush=True)
    finally:
        servers.stop()
    width = max(len(v or "defaults") for v in variants)
    print(f"\n{'variant':<{width}} {'workers':>7} {'rate/s':>8}  {'web':>6} {'workers':>7} {'broker':>6} {'graph':>6} "
          f"{'total':>6} {'client':>6}  {'vector msgs':>11} {'per msg':>7} {'load':>5}")
    for run in runs:
        cpu = run["cpu_ms_per_memory"]
        print(f"{run['variant'] or 'defaults':<{width}} {run['workers']:>7} {run['rate']:>8}  {cpu['web']:>6} {cpu['workers']:>7} "
              f"{cpu['broker']:>6} {cpu['graph']:>6} {cpu['total']:>6} {cpu['client']:>6}  {run['vector_messages']:>11} "
              f"{run['memories_per_vector_message']:>7} {run['load']:>5}")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "bench_singles.json"
    out.write_text(json.dumps({"when": datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ"), "args": vars(args),
                               "runs": runs}, indent=2))
    print(f"\nwritten: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
