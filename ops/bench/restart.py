"""How long the embedded default takes to come back, after a clean stop and after ``kill -9``.

    python -m ops.bench.restart [--memories 3000] [--provider hash]

Starts ``python -m ops.serve`` in a scratch dir (``ops.bench.embedded``), writes ``--memories``
memories through ``POST /memory/batch``, waits until every one is recallable and the queues
are empty, then: Ctrl-C and start again (timed to ``healthy``), and ``kill -9`` of every
process of the launcher's tree and start again (timed likewise). Before each start it records
the size of each store's AOF parts (base snapshot, incremental log), which is what a restart
has to load. Prints a table and writes ``ops/bench/results/bench_restart.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import time
from datetime import datetime, timezone
from pathlib import Path

import httpx

from ops.bench.embedded import EmbeddedService
from ops.bench.suite.procs import descendants
from ops.redis_servers import RedisServer, free_port

RESULTS = Path(__file__).resolve().parent / "results"
BATCH = 500


def aof_sizes(store_dir: Path) -> dict[str, int]:
    """Bytes of the base snapshot(s) and of the incremental log(s) in a store's AOF directory."""
    sizes = {"base": 0, "incr": 0}
    for path in store_dir.rglob("*.aof*"):
        if ".base." in path.name:
            sizes["base"] += path.stat().st_size
        elif ".incr." in path.name:
            sizes["incr"] += path.stat().st_size
    return sizes


def load_seconds(store_dir: Path) -> float | None:
    """What redis reported for its last load ("DB loaded from append only file: N seconds")."""
    log = store_dir / "redis.log"
    if not log.exists():
        return None
    lines = [line for line in log.read_text(errors="replace").splitlines() if "DB loaded from append only file" in line]
    return float(lines[-1].rsplit(":", 1)[1].split()[0]) if lines else None


def write_memories(service: EmbeddedService, count: int) -> float:
    started = time.monotonic()
    with httpx.Client(base_url=service.url, headers=service.headers, timeout=120) as api:
        for start in range(0, count, BATCH):
            items = [{"content": f"Restart bench memory {n}: the team discussed item {n % 97} of project {n % 13} "
                                 f"and agreed on step {n % 7}.", "tags": [f"project-{n % 13}"]}
                     for n in range(start, min(start + BATCH, count))]
            while True:
                answer = api.post("/memory/batch", json={"memories": items})
                if answer.status_code != 429:
                    answer.raise_for_status()
                    break
                time.sleep(float(answer.headers.get("Retry-After", "1")))
    return time.monotonic() - started


def wait_idle(service: EmbeddedService, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        health = httpx.get(f"{service.url}/health", timeout=10).json()
        if health.get("vector_count") == count and not any((health.get("queues") or {"x": 1}).values()):
            return
        time.sleep(1)
    raise RuntimeError(f"not idle within {timeout}s: {health}")


def timed_start(service: EmbeddedService, timeout: float) -> float | None:
    started = time.monotonic()
    try:
        service.start(timeout=timeout)
    except RuntimeError as exc:
        print(f"  start failed: {str(exc)[-400:]}")
        return None
    return round(time.monotonic() - started, 2)


def time_graph_alone(graph_dir: Path, timeout: float) -> float | None:
    """After a failed start: how long the graph's redis-server, started alone, takes to answer."""
    server = RedisServer("graph", free_port(), graph_dir, with_falkordb=True)
    started = time.monotonic()
    try:
        server.start(timeout)
        return round(time.monotonic() - started, 2)
    except RuntimeError:
        return None
    finally:
        server.stop()


def kill_all(service: EmbeddedService) -> None:
    pids = [service.process.pid, *descendants(service.process.pid)]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    service.process.wait()


def run(memories: int, provider: str, start_timeout: float) -> dict:
    service = EmbeddedService(env_overrides={"EMBEDDING_PROVIDER": provider})
    result: dict = {"memories": memories, "provider": provider}
    try:
        service.start(timeout=start_timeout)
        result["write_s"] = round(write_memories(service, memories), 1)
        wait_idle(service, memories, timeout=3600)
        rows = []
        # kill -9 first: right after the import, with whatever log the running launcher left
        for how in ("kill -9", "clean stop"):
            started = time.monotonic()
            if how == "clean stop":
                service.stop(remove=False)
            else:
                kill_all(service)
            stop_s = round(time.monotonic() - started, 2)
            sizes = {store: aof_sizes(service.data_dir / store) for store in ("broker", "graph")}
            restart_s = timed_start(service, start_timeout)
            count = httpx.get(f"{service.url}/health", timeout=10).json().get("memory_count") if restart_s else None
            loads = {store: load_seconds(service.data_dir / store) for store in ("broker", "graph")}
            row = {"how": how, "stop_s": stop_s, "restart_s": restart_s, "memory_count": count, "aof": sizes, "load_s": loads}
            rows.append(row)
            if restart_s is None:
                row["graph_alone_load_s"] = time_graph_alone(service.data_dir / "graph", start_timeout)
                break
        result["restarts"] = rows
    finally:
        service.stop()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=3000)
    parser.add_argument("--provider", default="hash")
    parser.add_argument("--start-timeout", type=float, default=600)
    parser.add_argument("--label", default="", help="what this run measures (kept in the JSON)")
    args = parser.parse_args()
    result = run(args.memories, args.provider, args.start_timeout)
    result |= {"label": args.label, "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "load": round(os.getloadavg()[0], 1)}
    print(f"{result['memories']} memories ({result['provider']}), written in {result.get('write_s')} s; load {result['load']}")
    print(f"{'after':<11} {'stop s':>7} {'restart s':>10} {'graph load s':>13} {'count':>6} "
          f"{'graph base/incr KB':>20} {'broker base/incr KB':>20}")
    for row in result.get("restarts", []):
        graph, broker = row["aof"]["graph"], row["aof"]["broker"]
        print(f"{row['how']:<11} {row['stop_s']:>7} {str(row['restart_s']):>10} {str(row['load_s']['graph']):>13} "
              f"{str(row['memory_count']):>6} {graph['base'] // 1024:>9}/{graph['incr'] // 1024:<10} "
              f"{broker['base'] // 1024:>9}/{broker['incr'] // 1024:<10}")
        if "graph_alone_load_s" in row:
            print(f"  the graph's redis-server alone answered after {row['graph_alone_load_s']} s")
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "bench_restart.json"
    runs = json.loads(path.read_text()) if path.exists() else []
    path.write_text(json.dumps([*runs, result], indent=2))


if __name__ == "__main__":
    main()
