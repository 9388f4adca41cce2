"""The embedded default's life as a user lives it: import, singles, recall during the build,
stop, restart, and growth. One command, one JSON, for issue 21's targets.

    python -m ops.bench.lifecycle                          # real text, the local model, shipped defaults
    python -m ops.bench.lifecycle --memories 100000        # the import under recall tops the store up to 100k
    python -m ops.bench.lifecycle --growth 10000,100000,1000000   # hash provider, sizes side by side

``use`` (the default) starts ``python -m ops.serve`` (what ``make run`` runs) in a scratch data
dir with nothing set but ports and tokens, and then:

1. checks the start's log for ``ERROR`` and tracebacks (a quiet start);
2. imports the real dev Slack exports with the importer (``ops.slack_import``) with nothing
   else asking (the rate issue 21 holds to the model's);
3. sends as many real texts again through ``POST /memory/batch`` with the prober running (what
   a user whose agents recall during an import gets): the imported texts, each made new with a
   counter, or, if ``--memories`` asks for more, Slack messages, LoCoMo and REALTALK turns,
   cycled the same way, until that many in all;
4. stores ``--singles`` conversation turns one at a time with ``--clients`` clients, each
   waiting for its answer (default ``wait``): once with nothing else asking, then ``--singles``
   more turns with the prober running;
5. from the second import on, but for the first singles, a prober recalls every 100 ms and
   reads ``/health`` every second; latencies and errors are kept per phase;
6. times, after the last write, until every memory is recallable and until enrichment and
   SIMILAR_TO are done;
7. stops with Ctrl-C (SIGINT) and checks no process of the launcher's tree outlives it, starts
   again (timed to ``healthy``) and counts the memories; then ``kill -9`` of every process, and
   the same.

The model's own rate is measured in child processes (``ops.bench.real``: the fastest of one
process's thread counts and one-thread processes side by side) on each phase's own texts (the
imported contents; the texts sent under recall; the singles' turns), so each of the pipeline's
rates comes with its ratio; the imports' also against the model given the same length-sorted
grouping the persist stage uses (``pipeline.embed_batches``), and each against the model called
from a worker's threads taking turns (what the pipeline can run: ``model_alone.model_run_apart``).
``--growth`` uses the hash provider (the model would take days at 1M): each size is reached
through ``POST /memory/batch``, then recall p50/p95 (plain and tag-scoped), the web's RSS, one
run of every consolidation cycle, plain recall again after them, and a restart are measured.
Prints a table and writes ``ops/bench/results/bench_lifecycle.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import httpx

from ops.bench import locomo
from ops.bench.embedded import EmbeddedService, index_builds, rss_mb
from ops.bench.suite.figures import PHASES, phase_memories
from ops.bench.suite.procs import alive, descendants
from ops.bench.real import DATA, as_worker_calls, conversation_turns, raw_model_rate, slack_texts
from ops.bench.restart import kill_all
from pipeline.config import Settings
from pipeline.vectors import edge_swap

RESULTS = Path(__file__).resolve().parent / "results"
BATCH = 500
BACKGROUND_QUEUES = ("enrich", "similarity")
SLOWEST_KEPT = 10  # per phase and kind, with their send times, to set beside the stores' and the web's logs
QUIET_START = re.compile(r"\bERROR\b|Traceback \(most recent call last\)")


class Prober(threading.Thread):
    """Recall every ``recall_every`` s and ``/health`` every ``health_every`` s, tagged by phase."""

    def __init__(self, service: EmbeddedService, queries: list[str], recall_every: float = 0.1,
                 health_every: float = 1.0):
        super().__init__(daemon=True)
        self.service, self.queries = service, queries
        self.recall_every, self.health_every = recall_every, health_every
        self.phase = "start"
        self.paused = threading.Event()  # set: no probes (a phase measured with nothing else asking)
        self.samples: list[tuple[str, str, float, int]] = []  # (phase, kind, seconds, status; 0 = no answer)
        self.sent_at: list[float] = []  # wall-clock time each sample was sent: outliers against the stores' logs
        self._stop_event = threading.Event()

    def run(self) -> None:
        with httpx.Client(base_url=self.service.url, headers=self.service.headers, timeout=30) as api:
            next_health, n = 0.0, 0
            while not self._stop_event.is_set():
                now = time.monotonic()
                if self.paused.is_set():
                    self._stop_event.wait(self.recall_every)
                    continue
                if now >= next_health:
                    self._probe(api, "health", "/health", {})
                    next_health = now + self.health_every
                self._probe(api, "recall", "/recall", {"query": self.queries[n % len(self.queries)], "limit": 10})
                n += 1
                self._stop_event.wait(max(0.0, self.recall_every - (time.monotonic() - now)))

    def _probe(self, api: httpx.Client, kind: str, path: str, params: dict) -> None:
        phase, sent, sent_wall = self.phase, time.monotonic(), time.time()
        try:
            status = api.get(path, params=params).status_code
        except httpx.HTTPError:
            status = 0
        self.samples.append((phase, kind, time.monotonic() - sent, status))
        self.sent_at.append(sent_wall)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=60)

    def summary(self) -> dict:
        """Latencies per phase and kind; safe while probing (it reads a copy of the samples so far)."""
        out: dict[str, dict] = {}
        samples = list(self.samples)
        for phase in dict.fromkeys(p for p, *_ in samples):
            for kind in ("recall", "health"):
                rows = [(s, status) for p, k, s, status in samples if p == phase and k == kind]
                if rows:
                    out.setdefault(phase, {})[kind] = {**latency_summary(rows, ok=(200,)),
                                                       "slowest": self.slowest(phase, kind)}
        return out

    def slowest(self, phase: str, kind: str, count: int = SLOWEST_KEPT) -> list[dict]:
        """The ``count`` slowest samples of a phase, each with when it was sent (UTC, ms)."""
        rows = [(s, at) for (p, k, s, _), at in zip(self.samples, self.sent_at) if p == phase and k == kind]
        return [{"ms": round(s * 1000, 1), "sent": datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="milliseconds")}
                for s, at in sorted(rows, reverse=True)[:count]]


def latency_summary(rows: list[tuple[float, int]], ok: tuple[int, ...]) -> dict:
    times = sorted(s * 1000 for s, _ in rows)
    return {"count": len(rows), "p50_ms": round(percentile(times, 50), 1), "p99_ms": round(percentile(times, 99), 1),
            "max_ms": round(times[-1], 1), "over_500_ms": sum(1 for t in times if t > 500),
            "errors": sum(1 for _, status in rows if status not in ok)}


def percentile(sorted_values: list[float], pct: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * pct / 100))]


def health(service: EmbeddedService) -> dict:
    return httpx.get(f"{service.url}/health", timeout=30).json()


def wait_for(service: EmbeddedService, done, timeout: float, what: str, watch=None,
             poll: Callable[[dict], float] = lambda health: 0.5) -> float:
    """Seconds until ``done(health)`` holds; raises after ``timeout``. ``watch(health, seconds)``
    sees every answer on the way; ``poll(health)`` says how long to wait before the next look."""
    started = time.monotonic()
    last: dict = {}
    while time.monotonic() - started < timeout:
        try:
            last = health(service)
            if watch is not None:
                watch(last, time.monotonic() - started)
            if done(last):
                return round(time.monotonic() - started, 2)
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(poll(last))
    raise RuntimeError(f"{what}: not within {timeout}s; last /health: {json.dumps(last)[:800]}")


def write_path_done(count: int):
    return lambda h: (h.get("vector_count") or 0) >= count and not any(
        n for q, n in (h.get("queues") or {}).items() if q not in BACKGROUND_QUEUES)


def closing_in(count: int, far_s: float = 0.5, near_s: float = 0.05) -> Callable[[dict], float]:
    """How long to wait before the next ``/health`` while ``count`` memories become recallable:
    ``far_s`` while that is further off, ``near_s`` once the next look at the rate so far could
    pass it. A look every 0.5 s overstates a 10 s import by 2.5 % on average; one every 50 ms
    all along would be a load of its own on the web."""
    first: list[tuple[float, int]] = []  # the first look: the rate so far is measured from it

    def poll(health: dict) -> float:
        t1, n1 = time.monotonic(), health.get("vector_count") or 0
        if not first:
            first.append((t1, n1))
        t0, n0 = first[0]
        rate = (n1 - n0) / (t1 - t0) if t1 > t0 else 0.0
        if n1 >= count or (rate > 0 and (count - n1) / rate <= 2 * far_s):
            return near_s
        return far_s
    return poll


class QueueDrain:
    """When each queue emptied for good, and its depth every ``every_s``: which stage the
    catch-up after the last write waited for."""

    def __init__(self, offset_s: float = 0.0, every_s: float = 30.0):
        self.offset_s, self.every_s = offset_s, every_s  # offset: the watch starts this long after the last write
        self.last_busy: dict[str, float | None] = {}
        self.timeline: list[dict] = []

    def __call__(self, h: dict, seconds: float) -> None:
        at = round(self.offset_s + seconds, 1)
        queues = h.get("queues") or {}
        for queue, depth in queues.items():
            if depth:
                self.last_busy[queue] = at
            else:
                self.last_busy.setdefault(queue, None)
        if not self.timeline or at - self.timeline[-1]["s"] >= self.every_s:
            self.timeline.append({"s": at, **{q: n for q, n in queues.items() if n}})

    def report(self) -> dict:
        """Per queue, seconds after the last write when it was last seen holding messages (None:
        never), and the sampled depths."""
        return {"last_busy_s": self.last_busy, "timeline": self.timeline}


def background_done(h: dict) -> bool:
    return not any((h.get("queues") or {"pending": 1}).values())


def quiet_start(service: EmbeddedService, offset: int) -> list[str]:
    log = (service.data_dir / "serve.log").read_text(errors="replace")[offset:]
    return [line for line in log.splitlines() if QUIET_START.search(line)][:20]


def log_size(service: EmbeddedService) -> int:
    path = service.data_dir / "serve.log"
    return path.stat().st_size if path.exists() else 0


def import_export(service: EmbeddedService, export: Path) -> dict:
    args = [sys.executable, "-m", "ops.slack_import", str(export), "--url", service.url, f"--token={service.api_token}",
            "--no-progress", "--json"]
    result = subprocess.run(args, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"importer failed on {export.name}: {result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def send_batches(service: EmbeddedService, bodies: list[dict]) -> None:
    with httpx.Client(base_url=service.url, headers=service.headers, timeout=300) as api:
        for start in range(0, len(bodies), BATCH):
            while True:
                answer = api.post("/memory/batch", json={"memories": bodies[start:start + BATCH]})
                if answer.status_code != 429:
                    answer.raise_for_status()
                    break
                time.sleep(float(answer.headers.get("Retry-After", "1")))


def real_bodies(texts: list[str], count: int, start: int = 0) -> list[dict]:
    """Memories ``start`` to ``count`` from real texts, cycled; a counter makes each repeat a new memory."""
    bodies = []
    for n in range(start, count):
        text = texts[n % len(texts)]
        cycle = n // len(texts)
        bodies.append({"content": text if cycle == 0 else f"{text} (#{cycle})", "tags": [f"lifecycle-{n % 50}"]})
    return bodies


def store_singles(service: EmbeddedService, turns: list[dict], clients: int) -> dict:
    local = threading.local()
    latencies: list[tuple[float, int]] = []

    def write(body: dict) -> None:
        if not hasattr(local, "api"):
            local.api = httpx.Client(base_url=service.url, headers=service.headers, timeout=120)
        sent = time.monotonic()
        try:
            status = local.api.post("/memory", json=body).status_code
        except httpx.HTTPError:
            status = 0
        latencies.append((time.monotonic() - sent, status))

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(write, turns))
    return {"clients": clients, "writes": len(turns), "status_201": sum(1 for _, s in latencies if s == 201),
            "status_202": sum(1 for _, s in latencies if s == 202),
            "latency": latency_summary(latencies, ok=(201, 202))}


def stop_and_restart(service: EmbeddedService, how: str, start_timeout: float) -> dict:
    before = health(service).get("memory_count")
    tree = [service.process.pid, *descendants(service.process.pid)]
    started = time.monotonic()
    if how == "ctrl-c":
        service.stop(remove=False)
    else:
        kill_all(service)
    stop_s = round(time.monotonic() - started, 2)
    time.sleep(0.5)  # a process killed by its parent's exit still needs a moment to be reaped
    orphans = [pid for pid in tree if alive(pid)]
    for pid in orphans:  # leave the machine clean for what follows; the row reports them
        os.kill(pid, signal.SIGKILL)
    offset = log_size(service)
    started = time.monotonic()
    service.start(timeout=start_timeout)
    restart_s = round(time.monotonic() - started, 2)
    after = health(service).get("memory_count")
    return {"how": how, "stop_s": stop_s, "orphans": len(orphans), "restart_s": restart_s,
            "memories_before": before, "memories_after": after, "log_errors": quiet_start(service, offset)}


def questions(limit: int = 400) -> list[str]:
    found = []
    for corpus in ("locomo-dev", "realtalk-dev"):
        for name, data in locomo.load(DATA / corpus):
            found += [q.text for q in locomo.questions(name, data)]
    return found[:limit]


def run_use(args: argparse.Namespace, save) -> dict:
    """Saved after each phase (``save(report)``, the probes so far included and ``"partial"``
    set), so a run stopped short — a slow day at 100k — still leaves what it measured."""
    exports = [DATA / "slack-dev" / name for name in args.exports.split(",") if name]
    texts = [t for export in exports for t in slack_texts(export)]
    turns = conversation_turns(2 * args.singles + 5000)
    singles, probed_singles = turns[:args.singles], turns[args.singles:2 * args.singles]
    # The import under recall: as many texts again as the exports hold, or the store topped up
    # to --memories. Every body is new (a counter on each repeat), starting past the exports.
    sources = texts + [t["content"] for t in turns[2 * args.singles:]] if args.memories else texts
    probed_bodies = real_bodies(sources, len(texts) + max(len(texts), args.memories - len(texts)), start=len(texts))
    print("measuring the model's own rate on the same texts …", flush=True)
    # Each phase is held to the model's rate on its own texts: Slack contents and conversation
    # turns differ several-fold in length, so one rate for both would flatter one of them.
    raw = {"import": raw_model_rate(texts[:args.raw_texts or None], Settings(), sorted_within=BATCH),
           "import_probed": raw_model_rate([b["content"] for b in probed_bodies[:args.raw_texts or None]], Settings(),
                                           sorted_within=BATCH),
           "singles": raw_model_rate([t["content"] for t in singles], Settings()),
           "singles_probed": raw_model_rate([t["content"] for t in probed_singles], Settings())}
    service = EmbeddedService()
    report: dict = {"mode": "use", "raw_model": raw, "partial": True}
    prober = None

    def checkpoint() -> None:
        save(report | {"probes": prober.summary()})
    try:
        started = time.monotonic()
        service.start(timeout=args.start_timeout)
        report["first_start_s"] = round(time.monotonic() - started, 1)
        report["start_log_errors"] = quiet_start(service, 0)
        prober = Prober(service, questions())
        prober.start()
        phases = report["phases"] = {}
        count = 0

        def write_phase(phase: str, write) -> float:
            """Run ``write()`` (memories written, the phase's record) as ``phase``, alone unless
            it is a probed one; record when all were answered and recallable. Returns the
            seconds from the last answer until recallable."""
            nonlocal count
            print(f"{phase} …", flush=True)  # a 100k run is quiet for most of an hour otherwise
            prober.phase = phase
            if not phase.endswith("_probed"):
                prober.paused.set()
            started = time.monotonic()
            written, record = write()
            answered = time.monotonic() - started
            count += written
            recallable = wait_for(service, write_path_done(count), args.timeout, f"{phase} recallable",
                                  poll=closing_in(count))
            prober.paused.clear()
            phases[phase] = record | {"accept_s": round(answered, 1), "end_to_end_s": round(answered + recallable, 1),
                                      "rate": round(written / (answered + recallable), 1)}
            checkpoint()
            print(f"{phase}: {written:,} memories, {phases[phase]['rate']}/s end to end", flush=True)
            return recallable

        def slack_import() -> tuple[int, dict]:
            imported = sum(import_export(service, e)["imported"] for e in exports)
            return imported, {"how": "ops.slack_import " + ",".join(e.name for e in exports), "memories": imported}

        def batch_import() -> tuple[int, dict]:
            send_batches(service, probed_bodies)
            return len(probed_bodies), {"how": "POST /memory/batch", "memories": len(probed_bodies)}

        def singles_of(batch: list[dict]):
            def write() -> tuple[int, dict]:
                record = store_singles(service, batch, args.clients)
                return record["status_201"] + record["status_202"], record
            return write

        for phase, write in (("import", slack_import), ("import_probed", batch_import),
                             ("singles", singles_of(singles)), ("singles_probed", singles_of(probed_singles))):
            recallable = write_phase(phase, write)
        prober.phase = "background"
        print("waiting for enrichment and SIMILAR_TO …", flush=True)
        drain = QueueDrain(offset_s=recallable)
        phases["background_after_last_write_s"] = round(
            recallable + wait_for(service, background_done, args.timeout, "background done", watch=drain), 1)
        phases["background_queues"] = drain.report()
        checkpoint()
        print(f"background done {phases['background_after_last_write_s']} s after the last write; stops and restarts …",
              flush=True)
        prober.phase = "idle"
        time.sleep(5)
        prober.stop()
        report["probes"] = prober.summary()
        prober = None
        report["restarts"] = [stop_and_restart(service, how, args.start_timeout) for how in ("ctrl-c", "kill -9")]
        report["partial"] = False
    finally:
        if prober:
            prober.stop()
        keep_store(service, args.keep)
    return report


def recall_latency(service: EmbeddedService, queries: list[str], tagged: bool) -> dict:
    rows = []
    with httpx.Client(base_url=service.url, headers=service.headers, timeout=60) as api:
        for n, query in enumerate(queries):
            params = {"query": query, "limit": 10}
            if tagged:
                params["tags"] = f"lifecycle-{n % 50}"
            sent = time.monotonic()
            try:
                status = api.get("/recall", params=params).status_code
            except httpx.HTTPError as exc:  # a web that stopped answering: the size is not measured
                raise RuntimeError(f"recall {n + 1} of {len(queries)} had no answer after "
                                   f"{time.monotonic() - sent:.0f} s ({type(exc).__name__})") from exc
            rows.append((time.monotonic() - sent, status))
    summary = latency_summary(rows, ok=(200,))
    times = sorted(s * 1000 for s, _ in rows)
    return {**summary, "p95_ms": round(percentile(times, 95), 1)}


def consolidation(service: EmbeddedService, timeout: float,
                  modes: tuple[str, ...] = ("decay", "creative", "cluster", "forget")) -> dict:
    """Each cycle in ``modes`` once (forget as a dry run); seconds each took, as the run reports them."""
    out = {}
    with httpx.Client(base_url=service.url, headers=service.headers, timeout=60) as api:
        for mode in modes:
            body = {"mode": mode, "dry_run": mode == "forget"}
            runs = api.post("/consolidate", params={"wait": "false"}, json=body).json()["consolidation"]["runs"]
            run_id = next(iter(runs.values()))["run_id"]  # {mode: run}
            deadline = time.monotonic() + timeout
            view = {}
            while time.monotonic() < deadline:
                view = api.get(f"/consolidate/runs/{run_id}").json()["run"]
                if view.get("status") in ("complete", "skipped", "failed", "refused"):
                    break
                time.sleep(1)
            out[mode] = {"status": view.get("status"), "duration_s": view.get("duration_s")}
    return out


def run_growth(args: argparse.Namespace, save) -> dict:
    """Each size's row is saved as soon as it is measured (``save(report)``): a size that fails
    (the web not answering, a wait running out) ends the run with its error in its row."""
    sizes = sorted(int(s) for s in args.growth.split(","))
    texts = [t for name in ("r-contributors", "houstondatavis") for t in slack_texts(DATA / "slack-dev" / name)]
    texts += [t["content"] for t in conversation_turns(10**6)]
    queries = questions(200)
    service = EmbeddedService(env_overrides={"EMBEDDING_PROVIDER": "hash"})
    report: dict = {"mode": "growth", "provider": "hash", "rows": []}
    stored = 0
    try:
        service.start(timeout=args.start_timeout)
        for size in sizes:
            row: dict = {"memories": size}
            report["rows"].append(row)
            try:
                measure_size(service, row, texts, queries, stored, args, lambda: save(report))
            except Exception as exc:  # noqa: BLE001 - the row says what stopped the run
                row["error"] = f"{type(exc).__name__}: {exc}"[:800]
                row.setdefault("web_rss_mb", web_rss(service))
                print(json.dumps(row), flush=True)
                save(report)
                break
            stored = size
            print(json.dumps(row), flush=True)
            save(report)
    finally:
        keep_store(service, args.keep)
    return report


def keep_store(service: EmbeddedService, keep: Path | None) -> None:
    """Stop the service; its stopped store is moved to ``keep`` (to profile recall on it) or removed."""
    service.stop(remove=keep is None)
    if keep is not None:
        shutil.move(service.data_dir, keep)
        print(f"the stopped store is in {keep}", flush=True)


def shard_copy_exists(service: EmbeddedService) -> bool:
    """A child build's copy of the shard is on disk. The web logs the build's start only once
    the copy is taken (11 s at 1M), so the copy is how a build that has begun is seen first."""
    return any((service.data_dir / "qdrant-edge").glob(f"*{edge_swap.BUILD}"))


def wait_for_index_build(service: EmbeddedService, timeout: float, before: tuple[int, list[float], int],
                         start_within_s: float = 60.0) -> dict:
    """Past the plain size the web builds the Edge index once writes pause (in a child process,
    the web answering meanwhile): recall is measured on the store as it settles, so wait up to
    ``start_within_s`` for a build to begin and then for every build begun to end (or fail).
    ``before``: ``index_builds`` as it was before this size's writes."""
    started_before, finished_before, failed_before = before
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        started, finished, failed = index_builds(service)
        started, finished, failed = started - started_before, finished[len(finished_before):], failed - failed_before
        running = started > len(finished) + failed or shard_copy_exists(service)
        if not running and (started or time.monotonic() - began >= start_within_s):
            return {"started": started, "seconds": finished, "failed": failed,
                    "waited_s": round(time.monotonic() - began, 1)}
        time.sleep(2)
    raise RuntimeError(f"the Edge index build did not end within {timeout}s")


def web_rss(service: EmbeddedService) -> dict | None:
    web = service.processes().get("web", [])
    if not web:
        return None
    return {field: round(max((rss_mb(pid, field) or 0) for pid in web), 1) for field in ("VmRSS", "RssAnon", "RssFile")}


def measure_size(service: EmbeddedService, row: dict, texts: list[str], queries: list[str], stored: int,
                 args: argparse.Namespace, save=lambda: None) -> None:
    """One size's row, saved (``save``) once recall is measured too: a run stopped during a 1M
    size's cycles or restart keeps its recall figures."""
    size = row["memories"]
    builds_before = index_builds(service)
    started = time.monotonic()
    send_batches(service, real_bodies(texts, size, start=stored))
    row["accept_s"] = round(time.monotonic() - started, 1)
    wait_for(service, write_path_done(size), args.timeout, f"{size} recallable")
    row["write_s"] = round(time.monotonic() - started, 1)
    row["background_backlog"] = {q: n for q, n in (health(service).get("queues") or {}).items() if n}
    row["index_build"] = wait_for_index_build(service, args.timeout, builds_before)
    row["recall_plain"] = recall_latency(service, queries, tagged=False)
    row["recall_tagged"] = recall_latency(service, queries, tagged=True)
    row["web_rss_mb"] = web_rss(service)
    save()
    row["consolidation"] = consolidation(service, args.timeout)
    # what the cycles' writes did to the index (a point written is scanned until a build)
    row["recall_plain_after_cycles"] = recall_latency(service, queries, tagged=False)
    row["restart"] = stop_and_restart(service, "ctrl-c", args.start_timeout)


def rss_text(rss: dict | float | None) -> str:
    """``VmRSS (RssAnon)``: all resident pages, and the process's own heap in brackets."""
    if not isinstance(rss, dict):
        return str(rss)
    return f"{rss.get('VmRSS')} ({rss.get('RssAnon')})"


def render(report: dict) -> str:
    if report["mode"] == "growth":
        lines = ["| memories | recall plain p50 / p95 ms | tag-scoped p50 / p95 ms | web RSS MB (own heap) | restart s | cycles s |",
                 "|---|---|---|---|---|---|"]
        for r in report["rows"]:
            if r.get("error"):
                lines.append(f"| {r['memories']:,} | {r['error']} | | {rss_text(r.get('web_rss_mb'))} | | |")
                continue
            cycles = ", ".join(f"{m} {c['duration_s']}" for m, c in r["consolidation"].items())
            lines.append(f"| {r['memories']:,} | {r['recall_plain']['p50_ms']} / {r['recall_plain']['p95_ms']} "
                         f"| {r['recall_tagged']['p50_ms']} / {r['recall_tagged']['p95_ms']} | {rss_text(r.get('web_rss_mb'))} "
                         f"| {r['restart']['restart_s']} | {cycles} |")
        return "\n".join(lines)
    phases = report["phases"]
    lines = ["| phase | memories | /s | model alone /s (in order / length-sorted) | ÷ model "
             "| model as a worker calls it /s (÷) | recall p99 / max ms | /health max ms | probe errors |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name in PHASES:
        row = phases.get(name)
        if row is None:
            continue
        count = phase_memories(row)
        probe = report["probes"].get(name, {})
        recall, healthz = probe.get("recall", {}), probe.get("health", {})
        model = report["raw_model"][name]
        rates = [model["rate"]] + ([model["length_sorted"]["rate"]] if "length_sorted" in model else [])
        ratios = " / ".join(f"{row['rate'] / rate:.0%}" for rate in rates)
        lines.append(f"| {name} | {count:,} | {row['rate']} | {' / '.join(map(str, rates))} | "
                     f"{ratios} | {as_worker_calls(row['rate'], model)} | {recall.get('p99_ms')} / "
                     f"{recall.get('max_ms')} | {healthz.get('max_ms')} | "
                     f"{recall.get('errors', 0) + healthz.get('errors', 0)} |")
    background = report["phases"]["background_after_last_write_s"]
    busy = (report["phases"].get("background_queues") or {}).get("last_busy_s") or {}
    drained = ", ".join(f"{q} {s} s" for q, s in sorted(busy.items(), key=lambda kv: kv[1] or 0) if s is not None)
    lines += ["", (f"enrichment and SIMILAR_TO done {background} s after the last write"
                   f"{f' (queues last seen busy: {drained})' if drained else ''}; "
                   f"first start {report['first_start_s']} s, log errors: {len(report['start_log_errors'])}"), "",
              "| stop | stop s | orphans | restart s | memories before → after | log errors |", "|---|---|---|---|---|---|"]
    for r in report["restarts"]:
        lines.append(f"| {r['how']} | {r['stop_s']} | {r['orphans']} | {r['restart_s']} | "
                     f"{r['memories_before']} → {r['memories_after']} | {len(r['log_errors'])} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.lifecycle", description=__doc__.splitlines()[0])
    parser.add_argument("--exports", default="r-contributors,houstondatavis", help="folders of shared/data/slack-dev")
    parser.add_argument("--memories", type=int, default=0, help="top the import up to this many with real texts")
    parser.add_argument("--singles", type=int, default=1500,
                        help="conversation turns stored one at a time, alone; as many again under recall")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--raw-texts", type=int, default=0,
                        help="at most this many of the imported texts for the model's own rate (0: all of them)")
    parser.add_argument("--growth", help="comma list of sizes: the growth mode (hash provider)")
    parser.add_argument("--timeout", type=float, default=4 * 3600, help="seconds allowed for each wait")
    parser.add_argument("--start-timeout", type=float, default=600)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--keep", type=Path, help="move the stopped store here (to profile recall on it)")
    args = parser.parse_args(argv)
    out = args.out or RESULTS / ("bench_lifecycle_growth.json" if args.growth else "bench_lifecycle.json")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=RESULTS.parent, check=False).stdout.strip() or None

    def save(report: dict) -> None:
        report |= {"argv": sys.argv[1:] if argv is None else argv, "commit": commit,
                   "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "load_after": os.getloadavg()[0]}
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n")

    report = run_growth(args, save) if args.growth else run_use(args, save)
    save(report)
    print(render(report))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
