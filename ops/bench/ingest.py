"""Ingestion benchmark over the real stack: accepted → recallable, end to end.

    python -m ops.bench.ingest [--messages 100000] [--local-messages 4000] [--singles 10000] [--quick]

For each embedding provider (``hash``, ``local``) and 1 and 2 worker processes, on a fresh
stack (real redis-server + FalkorDB, uvicorn web owning Qdrant Edge, Dramatiq workers):

- **batch**: a synthetic Slack export (``ops.bench.gen_slack_export``) imported with
  ``ops.slack_import`` through ``POST /memory/batch``; messages/s from the first request
  until every imported memory is in the graph *and* the vector index.
- **single**: ``POST /memory`` (``wait=false``) from 8 concurrent clients (``http.client``
  keep-alive connections: a light load generator); memories/s until all are recallable.
- **raw model**: the local model embedding the same texts (the export's first
  ``--raw-model-texts``) in a process of its own, with the workers' batch size and torch
  threads, right before each ``local`` configuration: the limit one worker process is
  compared to (the ratio is reported beside it).
- **importer peak RSS** (its own VmHWM) on a small and the large export (it must stay flat).

Between the batch and the single-write phases the previous phase's enrichment backlog
(SIMILAR_TO) drains and the Edge index build (HNSW) of its points runs to the end, so each
phase measures its own work: a build holds the shard for seconds and vector writes wait
behind it, so one that happens to start as the single writes begin is the previous phase's
cost landing in this one (``--no-settle-index`` measures the old way; the builds inside each
phase are reported either way). Prints one table (with the load
average) and writes ``ops/bench/results/bench_ingest.json``. Figures from a shared 2-core machine are
noisy: compare ratios within one run.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import orjson
import redis

from ops.bench.busy import BusySampler, format_report
from ops.bench.gen_slack_export import generate
from ops.bench.model_alone import model_run_apart
from ops.bench.suite.procs import cpu_seconds, group_members, wait_measured
from pipeline.tracking import INFLIGHT_KEY
from pipeline.vectors import INDEX_BUILD_FINISHED, INDEX_BUILD_STARTED
from ops.bench.stack import API_TOKEN, AUTH, Servers, Stack, discard_data

RESULTS = Path(__file__).resolve().parent / "results"


def _wait_recallable(stack: Stack, expected: int, timeout: float) -> float:
    """Block until the graph and the vector index hold ``expected`` memories; returns when.

    Polls the broker's in-flight set (emptied as the vector stage finishes each memory), not
    ``/health``: its exact counts cost the web process, which is the one being measured.
    The counts are checked once at the end.
    """
    broker = redis.Redis.from_url(stack.redis_url)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if broker.scard(INFLIGHT_KEY) == 0:
            done = time.monotonic()
            with stack.client(timeout=120) as api:
                health = api.get("/health").json()
            if health["memory_count"] >= expected and health["vector_count"] >= expected:
                return done
        time.sleep(0.05)
    raise TimeoutError(f"not recallable after {timeout}s")


def _wait_queues_empty(stack: Stack, timeout: float) -> float:
    """Let the previous phase's enrichment backlog (SIMILAR_TO) drain; returns seconds waited."""
    broker = redis.Redis.from_url(stack.redis_url)
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if all(broker.hlen(f"mempipe:{q}.msgs") == 0 for q in ("persist", "embed", "vectors", "similarity")):
            break
        time.sleep(0.2)
    return round(time.monotonic() - started, 1)


def _catch_up(stack: Stack, servers: Servers, memories: int, timeout: float) -> dict:
    """The work a phase left behind once its memories were recallable (SIMILAR_TO linking,
    which yields to the write stream): how long it took and its CPU per memory, so the
    deferred share of the cost is reported, not hidden."""
    meter = CpuMeter(stack, servers)
    seconds = _wait_queues_empty(stack, timeout)
    return {"seconds": seconds, "cpu_ms_per_memory": meter.per_memory_ms(memories)}


class IndexBuilds:
    """The Edge index builds the web process logged (``pipeline.vectors.edge``), read by offset
    into its log: how many started and finished within a phase, and their seconds."""

    def __init__(self, stack: Stack):
        self._path = stack.data_dir / "web.log"

    def mark(self) -> int:
        return self._path.stat().st_size if self._path.exists() else 0

    def since(self, offset: int) -> dict:
        """Builds logged after ``offset``: how many started and finished, their seconds, and
        whether one that started after it has finished (``complete``)."""
        started = finished = 0
        seconds = 0.0
        complete = False
        with open(self._path, "rb") as log:
            log.seek(offset)
            for line in log:
                if INDEX_BUILD_STARTED.encode() in line:
                    started += 1
                elif INDEX_BUILD_FINISHED.encode() in line:
                    finished += 1
                    complete = complete or started > 0  # a build begun before offset covers less
                    try:
                        seconds += float(json.loads(line).get("seconds") or 0.0)
                    except ValueError:
                        pass  # a text-format log: counted, not timed
        return {"started": started, "finished": finished, "seconds": round(seconds, 2), "complete": complete}

    def settle(self, offset: int, start_within: float, timeout: float) -> float:
        """Wait for the build of what was written before ``offset``: until one that started
        after it has finished, or, when none starts within ``start_within`` seconds (none was
        due), not at all. Returns the seconds waited."""
        began = time.monotonic()
        while time.monotonic() - began < timeout:
            builds = self.since(offset)
            if builds["complete"]:
                break
            if not builds["started"] and time.monotonic() - began > start_within:
                break
            time.sleep(0.2)
        return round(time.monotonic() - began, 1)


def _stack_parts(stack: Stack, servers: Servers) -> dict:
    return {
        "web": lambda: [stack.web.pid],
        # Worker processes run in the dramatiq command's process group (Stack.start_worker).
        "workers": lambda: group_members({w.pid for w in stack.workers}),
        "broker": lambda: [servers.broker.process.pid],
        "graph": lambda: [servers.graph.process.pid],
    }


class CpuMeter:
    """CPU seconds spent by each part of a stack: the load-independent cost of a phase.

    On a machine shared with other jobs, rates measure the share of the cores this stack
    got; CPU per memory measures what the work costs, and what it would do on idle cores.
    """

    def __init__(self, stack: Stack, servers: Servers):
        self._parts = _stack_parts(stack, servers)
        self._start = self._read()

    def _read(self) -> dict[str, dict[int, float]]:
        return {part: {pid: cpu_seconds(pid) for pid in pids()} for part, pids in self._parts.items()}

    def per_memory_ms(self, memories: int) -> dict[str, float]:
        now = self._read()
        spent = {part: sum(cpu - self._start[part].get(pid, 0.0) for pid, cpu in now[part].items()) for part in now}
        spent["total"] = sum(spent.values())
        return {part: round(seconds * 1000 / max(memories, 1), 3) for part, seconds in spent.items()}


def _idle_rate(cpu: dict[str, float], workers: int, cores: int = 2) -> float:
    """What the measured CPU costs allow on idle cores: the web process is one Python process
    (one core at most), each worker likewise, and all parts share ``cores``."""
    bounds = [cores * 1000 / cpu["total"]]
    if cpu["web"]:
        bounds.append(1000 / cpu["web"])
    if cpu["workers"]:
        bounds.append(workers * 1000 / cpu["workers"])
    return round(min(bounds))


def _load() -> float:
    return round(os.getloadavg()[0], 1)


def _importer_with_rss(stack: Stack, export: Path, busy: BusySampler | None = None) -> tuple[dict, int, float]:
    """Run the importer; returns its summary, its own peak RSS (KiB) and its CPU seconds."""
    args = [sys.executable, "-m", "ops.slack_import", str(export), "--url", stack.url, "--token", API_TOKEN,
            "--no-progress", "--json"]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(args, cwd=Path(__file__).resolve().parents[2], env=stack.env(), stdout=out, stderr=err)
        if busy is not None:
            busy.add("importer", process.pid)
        usage = wait_measured(process)
        out.seek(0), err.seek(0)
        if process.returncode != 0:
            raise RuntimeError(f"importer failed: {err.read()[-2000:]}")
        return json.loads(out.read().strip().splitlines()[-1]), usage.peak_rss_kib, usage.cpu_seconds


def bench_batch(stack: Stack, export: Path, timeout: float, servers: Servers | None = None) -> dict:
    meter = CpuMeter(stack, servers) if servers else None
    # Sampled over time as well: the import, and the tail after the importer exits (ops.bench.busy).
    busy = BusySampler(_stack_parts(stack, servers)).start() if servers else None
    started = time.monotonic()
    summary, rss_kib, importer_cpu = _importer_with_rss(stack, export, busy)
    accepted_at = time.monotonic()
    if busy:
        busy.mark("import_done")
    done = _wait_recallable(stack, summary["imported"], timeout)
    cpu = meter.per_memory_ms(summary["imported"]) if meter else None
    if cpu:
        cpu["client"] = round(importer_cpu * 1000 / max(summary["imported"], 1), 3)
    if busy:
        busy.stop()
    return {
        "cpu_ms_per_memory": cpu,
        "busy": busy.report(summary["imported"], split="import_done") if busy else None,
        "messages": summary["messages"], "imported": summary["imported"], "skipped": sum(summary["skipped"].values()),
        "reconciles": summary["reconciles"], "accept_s": round(accepted_at - started, 2),
        "end_to_end_s": round(done - started, 2), "rate": round(summary["imported"] / (done - started), 1),
        "importer_peak_rss_mib": round(rss_kib / 1024, 1),
    }


def bench_singles(stack: Stack, count: int, concurrency: int, timeout: float, servers: Servers | None = None,
                  client: str = "http.client") -> dict:
    """``count`` single ``POST /memory?wait=false`` from ``concurrency`` threads, each on one
    keep-alive connection.

    The load generator shares the two cores with the service, so it should cost little:
    ``http.client`` (stdlib) spends ~0.3 ms of CPU per request here, httpx ~1.5 ms (the
    figures before 2026-12-01 were taken with httpx; ``client="httpx"`` repeats them).
    The service's own CPU per memory does not depend on the choice.
    """
    local = threading.local()
    headers = {**AUTH, "Content-Type": "application/json"}

    def post(body: dict) -> int:
        if client == "httpx":
            if not hasattr(local, "client"):
                local.client = stack.client()
            return local.client.post("/memory", params={"wait": "false"}, json=body).status_code
        if not hasattr(local, "conn"):
            local.conn = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=60)
        local.conn.request("POST", "/memory?wait=false", body=orjson.dumps(body), headers=headers)
        response = local.conn.getresponse()
        response.read()
        return response.status

    def write(i: int) -> int:
        return post({"content": f"single write {i}: {' '.join(str(i * k % 977) for k in range(12))}", "tags": ["bench:single"]})

    meter = CpuMeter(stack, servers) if servers else None
    busy = BusySampler(_stack_parts(stack, servers)).start() if servers else None
    started, client_cpu = time.monotonic(), time.process_time()
    with ThreadPoolExecutor(concurrency) as pool:
        codes = list(pool.map(write, range(count)))
    accepted_at, client_cpu = time.monotonic(), time.process_time() - client_cpu
    if busy:
        busy.mark("writes_done")
    refused = sum(1 for c in codes if c != 202)
    done = _wait_recallable(stack, count - refused, timeout)
    cpu = meter.per_memory_ms(count - refused) if meter else None
    if busy:
        busy.stop()
    if cpu:  # this process's client threads: not the service's cost, but the same cores
        cpu["client"] = round(client_cpu * 1000 / max(count - refused, 1), 3)
    return {
        "cpu_ms_per_memory": cpu,
        "busy": busy.report(count - refused, split="writes_done") if busy else None,
        "writes": count, "refused": refused, "accept_rate": round(count / (accepted_at - started), 1),
        "end_to_end_s": round(done - started, 2), "rate": round((count - refused) / (done - started), 1),
    }


def raw_model_rate_apart(export: Path, limit: int, torch_threads: int = 1) -> dict:
    """The local model alone on the export's first ``limit`` message texts, run as the workers
    run it, in a child process (torch never loads into this one, whose later children would
    otherwise count its pages in their peak RSS)."""
    from pipeline.config import Settings
    from pipeline.slack.export import SlackExport

    texts: list[str] = []
    with SlackExport(export) as slack:
        _, conversations, _ = slack.directory()
        for conversation in conversations:
            texts += [m.message.get("text", "") for m in slack.messages(conversation)]
            if len(texts) >= limit:
                break
    return model_run_apart([t for t in texts[:limit] if t], Settings(), torch_threads)


def run_config(servers: Servers, provider: str, workers: int, export: Path, singles: int, timeout: float,
               single_client: str = "http.client", catch_up: bool = True, settle_index: bool = True) -> dict:
    # With settle_index the web considers an index build every 2 s (the tests' interval), so
    # the build of a phase's points follows it by EDGE_OPTIMIZE_QUIET_S and the wait between
    # phases is short; without it, every 30 s as before, wherever that falls.
    stack = Stack.create(servers, EMBEDDING_PROVIDER=provider, EDGE_OPTIMIZE_INTERVAL_S="2" if settle_index else "30",
                         BACKPRESSURE_MAX_PENDING="20000", ACTOR_MAX_RETRIES="12")
    failed = False
    try:
        stack.start_web(timeout=120)
        stack.start_worker(processes=workers, threads=2)
        with stack.client() as api:  # let the workers boot (and load the model) before timing
            api.post("/memory", json={"content": "warm-up"})
        builds = IndexBuilds(stack)
        row = {"provider": provider, "workers": workers, "load_before": _load()}
        mark = builds.mark()
        row["batch"] = bench_batch(stack, export, timeout, servers)
        row["batch"]["index_builds"] = builds.since(mark)
        print(f"... batch: {row['batch']['rate']}/s, CPU ms per memory {row['batch']['cpu_ms_per_memory']}", file=sys.stderr, flush=True)
        if catch_up or singles:  # the single-write phase needs the queues empty first anyway
            end_of_batch = builds.mark()
            row["batch"]["after"] = _catch_up(stack, servers, row["batch"]["imported"], timeout)
            row["drain_between_phases_s"] = row["batch"]["after"]["seconds"]
            if settle_index and singles:
                row["index_settle_between_phases_s"] = builds.settle(end_of_batch, start_within=15, timeout=timeout)
                row["index_builds_between_phases"] = builds.since(end_of_batch)
        if singles:
            mark = builds.mark()
            row["single"] = bench_singles(stack, singles, 8, timeout, servers, client=single_client)
            row["single"]["index_builds"] = builds.since(mark)
            if catch_up:
                row["single"]["after"] = _catch_up(stack, servers, singles - row["single"]["refused"], timeout)
        row["load_after"] = _load()
        return row
    except Exception:
        print(f"--- web log ---\n{stack.read_log('web')}\n--- worker log ---\n{stack.read_log('worker')}", file=sys.stderr)
        failed = True
        raise
    finally:
        stack.stop()
        if not failed:  # the next configuration starts on empty servers; a failed one's logs stay
            discard_data(stack)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.ingest", description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000, help="synthetic export size for the hash provider")
    parser.add_argument("--local-messages", type=int, default=4_000, help="export size for the local model")
    parser.add_argument("--raw-model-texts", type=int, default=4_000,
                        help="texts the model alone embeds for its raw rate: the export's first N (a steady rate needs a "
                             "few thousand; at 100k messages all of them would take as long as the import)")
    parser.add_argument("--singles", type=int, default=10_000, help="single POST /memory writes (hash provider)")
    parser.add_argument("--small", type=int, default=10_000, help="small export for the importer RSS comparison")
    parser.add_argument("--providers", default="hash,local")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--no-catch-up", dest="catch_up", action="store_false",
                        help="do not wait for (and measure) the deferred SIMILAR_TO linking after the last phase")
    parser.add_argument("--no-settle-index", dest="settle_index", action="store_false",
                        help="do not wait for the batch's Edge index build before the single writes (index builds every 30 s, as before 2026-12-01 session 12)")
    parser.add_argument("--single-client", choices=("http.client", "httpx"), default="http.client",
                        help="load generator of the single-write phase (httpx: as measured before 2026-12-01)")
    args = parser.parse_args(argv)

    base = Path(tempfile.mkdtemp(prefix="mempipe-bench-"))
    exports = {"hash": base / "export-hash", "local": base / "export-local", "small": base / "export-small"}
    generate(exports["hash"], args.messages)
    generate(exports["local"], args.local_messages, seed=11)
    generate(exports["small"], args.small, seed=13)
    servers = Servers.start(base / "servers")
    rows, extra = [], {}
    try:
        providers = [p for p in args.providers.split(",") if p]
        worker_counts = [int(w) for w in args.workers.split(",") if w]
        for provider in providers:
            for workers in worker_counts:
                export = exports["hash" if provider == "hash" else "local"]
                singles = args.singles if provider == "hash" else 0
                raw = None
                if provider == "local":  # the model alone, back to back with the pipeline run
                    print("... local model alone", file=sys.stderr, flush=True)
                    raw = raw_model_rate_apart(export, min(args.local_messages, args.raw_model_texts))
                print(f"... {provider}, {workers} worker process(es)", file=sys.stderr, flush=True)
                row = run_config(servers, provider, workers, export, singles, args.timeout, args.single_client, args.catch_up,
                                 args.settle_index)
                if raw is not None:
                    row["raw_model"] = raw
                    row["ratio_to_raw_model"] = round(row["batch"]["rate"] / raw["rate"], 3)
                    # Load-independent: the model's own CPU per text over what one memory cost
                    # the worker processes (the model plus everything else they do per memory).
                    row["cpu_ratio_to_raw_model"] = round(raw["cpu_ms_per_text"] / row["batch"]["cpu_ms_per_memory"]["workers"], 3)
                rows.append(row)
        small = Stack.create(servers, EMBEDDING_PROVIDER="hash")
        try:
            small.start_web()
            small.start_worker()
            extra["importer_rss_small"] = bench_batch(small, exports["small"], args.timeout)
        finally:
            small.stop()
    finally:
        servers.stop()

    print(f"\nload average (1 min) {rows[0]['load_before'] if rows else '-'} at start, {_load()} at end; "
          f"{os.cpu_count()} cpus")
    print(f"\n{'provider':<8} {'workers':>7} {'messages':>9} {'batch e2e/s':>12} {'single x8 e2e/s':>16} "
          f"{'raw model/s':>12} {'ratio':>6} {'importer RSS':>13} {'load':>10}")
    for row in rows:
        single = row.get("single", {}).get("rate", "-")
        raw = row.get("raw_model", {}).get("rate", "-")
        ratio = f"{row['ratio_to_raw_model']:.0%}" if "ratio_to_raw_model" in row else "-"
        print(f"{row['provider']:<8} {row['workers']:>7} {row['batch']['messages']:>9} {row['batch']['rate']:>12} "
              f"{single:>16} {raw:>12} {ratio:>6} {row['batch']['importer_peak_rss_mib']:>9} MiB "
              f"{row['load_before']:>4}-{row['load_after']:<4}")
    print("\nCPU per memory (ms; load-independent: what each part spent, whatever share of the cores it got)")
    print(f"{'provider':<8} {'workers':>7} {'phase':<7} {'web':>7} {'workers':>8} {'broker':>7} {'graph':>7} {'total':>7} "
          f"{'=> /s on 2 idle cores':>22} {'client':>7}")
    for row in rows:
        for phase in ("batch", "single"):
            cpu = (row.get(phase) or {}).get("cpu_ms_per_memory")
            if cpu:
                print(f"{row['provider']:<8} {row['workers']:>7} {phase:<7} {cpu['web']:>7} {cpu['workers']:>8} "
                      f"{cpu['broker']:>7} {cpu['graph']:>7} {cpu['total']:>7} {_idle_rate(cpu, row['workers']):>22} "
                      f"{cpu.get('client', '-'):>7}")
    print("\nOver time (ops.bench.busy, sampled every 0.2 s): per part CPU s, ms per memory, mean cores, share of the time one "
          "of its processes used >= 90 % of a core; the import/writes, then the tail until all were recallable")
    for row in rows:
        for phase in ("batch", "single"):
            report = (row.get(phase) or {}).get("busy")
            if report:
                for line in format_report(f"{row['provider']} {row['workers']}w {phase}", report):
                    print(line)
    print("\nAfter each phase: the deferred SIMILAR_TO linking, until the queues were empty (CPU ms per memory of the phase)")
    for row in rows:
        for phase in ("batch", "single"):
            after = (row.get(phase) or {}).get("after")
            if after:
                cpu = after["cpu_ms_per_memory"]
                print(f"{row['provider']:<8} {row['workers']:>7} {phase:<7} {after['seconds']:>6} s  web {cpu['web']}  "
                      f"workers {cpu['workers']}  broker {cpu['broker']}  graph {cpu['graph']}  total {cpu['total']}")
    print("\nEdge index builds (HNSW; vector writes wait behind one) started / finished inside each phase, and between the phases")
    for row in rows:
        for phase in ("batch", "single"):
            b = (row.get(phase) or {}).get("index_builds")
            if b:
                print(f"{row['provider']:<8} {row['workers']:>7} {phase:<7} {b['started']} / {b['finished']} ({b['seconds']} s)")
        if "index_builds_between_phases" in row:
            b = row["index_builds_between_phases"]
            print(f"{row['provider']:<8} {row['workers']:>7} between  {b['started']} / {b['finished']} ({b['seconds']} s), "
                  f"waited {row['index_settle_between_phases_s']} s after the {row['drain_between_phases_s']} s SIMILAR_TO drain")
    for row in rows:
        if "cpu_ratio_to_raw_model" in row:
            print(f"local, {row['workers']} worker(s): the model alone spends {row['raw_model']['cpu_ms_per_text']} ms CPU "
                  f"per text, the workers {row['batch']['cpu_ms_per_memory']['workers']} ms per memory: "
                  f"{row['cpu_ratio_to_raw_model']:.0%} of worker CPU is the model")
    for provider in ("hash", "local"):
        rates = {r["workers"]: r["batch"]["rate"] for r in rows if r["provider"] == provider}
        if 1 in rates and 2 in rates:
            print(f"{provider}: 2 workers / 1 worker = {rates[2] / rates[1]:.2f}x")
    if "importer_rss_small" in extra:
        s = extra["importer_rss_small"]
        print(f"importer peak RSS: {s['importer_peak_rss_mib']} MiB at {s['messages']} messages; "
              + ", ".join(f"{r['batch']['importer_peak_rss_mib']} MiB at {r['batch']['messages']}" for r in rows))
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = RESULTS / "bench_ingest.json"
    out.write_text(json.dumps({"when": stamp, "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                               "args": vars(args), "rows": rows, **extra}, indent=2))
    print(f"\nwritten: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
