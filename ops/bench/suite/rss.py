"""Peak RSS of the web and worker processes of the embedded default under a short mixed load.

Starts ``python -m ops.serve`` (exactly what ``make run`` starts: redis-servers, worker,
enricher, clock, web) on free ports in a temporary data dir, samples the resident memory of
every process it started while driving single writes, batches, recalls and a consolidation
dry run, then reads each process's high-water mark (VmHWM) before stopping it.

    python -m ops.bench.suite.rss [--quick] [--provider local|hash]

Writes ops/bench/results/bench_rss.json (the suite's ``rss`` section).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from ops.redis_servers import free_port
from ops.bench.suite import machine, procs, sources

TOKEN, ADMIN = "suite-rss-token", "suite-rss-admin"
WORDS = "alpha beta gamma delta project billing database release deploy customer meeting budget design".split()


class Sampler(threading.Thread):
    """Polls the process tree under the supervisor; keeps each process's largest RSS and role."""

    def __init__(self, root: int, interval: float = 0.5):
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.roles: dict[int, str] = {}
        self.peak_kib: dict[int, int] = {}
        self.done = threading.Event()

    def sample(self) -> None:
        parents = procs.tree(self.root)
        for pid, parent in parents.items():
            if pid not in self.roles:
                found = procs.role(procs.cmdline(pid))
                # A child the worker forks or spawns is the worker's, whatever its command line.
                self.roles[pid] = self.roles.get(parent, found) if found == "other" else found
            for value in (procs.rss_kib(pid), procs.peak_rss_kib(pid)):
                if value:
                    self.peak_kib[pid] = max(self.peak_kib.get(pid, 0), value)

    def run(self) -> None:
        while not self.done.wait(self.interval):
            self.sample()

    def summary(self) -> dict:
        groups: dict[str, list[int]] = {}
        for pid, kib in self.peak_kib.items():
            groups.setdefault(self.roles.get(pid, "other"), []).append(kib)
        order = ("web", "worker", "enricher", "clock", "redis-server (broker, graph)", "other")
        return {
            name: {"count": len(groups[name]), "peak_rss_mib_max": round(max(groups[name]) / 1024, 1),
                   "peak_rss_mib_sum": round(sum(groups[name]) / 1024, 1)}
            for name in order if name in groups
        }


def _wait_healthy(api: httpx.Client, serve: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if serve.poll() is not None:
            raise RuntimeError(f"ops.serve exited with {serve.returncode}")
        try:
            if api.get("/health").status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise TimeoutError(f"ops.serve not healthy after {timeout} s")


def _text(rng: random.Random, i: int) -> str:
    return f"note {i}: " + " ".join(rng.choices(WORDS, k=12))


def drive(api: httpx.Client, singles: int, batches: int, recalls: int, timeout: float) -> dict:
    """The mixed load: concurrent single writes and batches, then recalls, then a consolidation."""
    rng = random.Random(7)
    before = api.get("/health").json().get("memory_count") or 0

    def single(i: int) -> None:
        api.post("/memory", params={"wait": "false"}, json={"content": _text(rng, i), "tags": [f"proj:{i % 5}"]}).raise_for_status()

    def batch(b: int) -> None:
        items = [{"content": _text(rng, 10**6 + b * 100 + k), "tags": [f"proj:{k % 5}", "bench:batch"]} for k in range(100)]
        api.post("/memory/batch", json={"memories": items}, timeout=120).raise_for_status()

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(single, range(singles)))
        list(pool.map(batch, range(batches)))
    expected = before + singles + batches * 100
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        health = api.get("/health").json()
        if (health.get("vector_count") or 0) >= expected and (health.get("memory_count") or 0) >= expected:
            break
        time.sleep(1)
    else:
        raise TimeoutError(f"{expected} memories not recallable after {timeout} s")
    for i in range(recalls):
        params = [{"query": " ".join(rng.sample(WORDS, 3))}, {"query": rng.choice(WORDS), "tags": f"proj:{i % 5}"},
                  {"query": rng.choice(WORDS), "expand_relations": "true"}][i % 3]
        api.get("/recall", params={**params, "limit": 10}).raise_for_status()
    api.post("/consolidate", json={"mode": "decay", "dry_run": True}, timeout=120).raise_for_status()
    return {"single_writes": singles, "batch_writes": batches * 100, "recalls": recalls, "decay_dry_runs": 1}


def _stop(serve: subprocess.Popen) -> None:
    """SIGINT is the supervisor's Ctrl-C: it stops its children in order. Then the group, if stuck."""
    for sig, grace in ((signal.SIGINT, 90), (signal.SIGKILL, 10)):
        if serve.poll() is not None:
            return
        try:
            os.killpg(serve.pid, sig) if sig == signal.SIGKILL else serve.send_signal(sig)
            serve.wait(grace)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            continue


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.suite.rss", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--provider", default="local", choices=("local", "hash"))
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args(argv)
    singles, batches, recalls = (100, 4, 60) if args.quick else (1000, 20, 300)

    data_dir = Path(tempfile.mkdtemp(prefix="mempipe-suite-rss-"))
    port = free_port()
    env = {**os.environ, "HOST": "127.0.0.1", "PORT": str(port), "REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",
           "FALKORDB_HOST": "127.0.0.1", "FALKORDB_PORT": str(free_port()), "MEMPIPE_DATA_DIR": str(data_dir),
           "AUTOMEM_API_TOKEN": TOKEN, "ADMIN_API_TOKEN": ADMIN, "EMBEDDING_PROVIDER": args.provider,
           "WORKER_METRICS_PORT": "0", "HF_HUB_OFFLINE": "1", "LOG_LEVEL": "WARNING"}
    with (data_dir / "serve.log").open("wb") as log:
        serve = subprocess.Popen([sys.executable, "-m", "ops.serve"], cwd=machine.ROOT, env=env, stdout=log,
                                 stderr=subprocess.STDOUT, start_new_session=True)
    sampler = Sampler(serve.pid)
    started = time.monotonic()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as api:
            _wait_healthy(api, serve, 300)
            sampler.start()
            api.post("/memory", json={"content": "warm up: the model loads here"}, timeout=300)
            load = drive(api, singles, batches, recalls, args.timeout)
            time.sleep(2)  # the enricher and the web's index rebuild run behind the writes
            sampler.sample()  # last look, VmHWM included, while every process is alive
    except Exception:
        print((data_dir / "serve.log").read_text(errors="replace")[-3000:], file=sys.stderr)
        raise
    finally:
        sampler.done.set()
        if sampler.is_alive():
            sampler.join(10)
        _stop(serve)
    report = {"benchmark": "rss", "measured_at": machine.now_iso(), **machine.commit(), "provider": args.provider,
              "quick": args.quick, "seconds": round(time.monotonic() - started, 1), "load": load,
              "processes": sampler.summary()}
    sources.RESULTS.mkdir(parents=True, exist_ok=True)
    (sources.RESULTS / "bench_rss.json").write_text(json.dumps(report, indent=2) + "\n")
    for name, p in report["processes"].items():
        print(f"{name:<30} {p['count']:>3} process(es)  peak {p['peak_rss_mib_max']:>8} MiB  sum {p['peak_rss_mib_sum']:>8} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
