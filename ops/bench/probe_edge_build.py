"""What the web sees while the Edge index is built: in a child process (EDGE_BUILD_IN_CHILD) or in-process.

    python -m ops.bench.probe_edge_build --points 40000 [--modes child,in-process,codes-child] [--storage disk,ram]
        [--payload-indexes disk,ram] [--nice 10]

One ``EdgeVectorStore`` per mode, as the web holds it: ``--points`` random 384-d points with a
memory's payload. ``child`` and ``in-process`` build the HNSW graph (``plain_max_points``
lowered so the build is due at this size); ``codes-child`` is the codes-only build a shard
under its plain size gets (EDGE_CODES_BUILD_MIN_CHANGES), in a child. ``--storage`` runs each
mode with the vectors and codes in memory-mapped files (``disk``, EDGE_VECTORS_ON_DISK) and/or
loaded into RAM (``ram``), and ``--payload-indexes`` with the built segments' payload indexes
memory-mapped (``disk``, EDGE_PAYLOAD_INDEXES_ON_DISK) and/or rebuilt in the heap at each open
(``ram``). Each row also times 100
quiet searches at limit 50 before the build and after it. Beside the build, as in the web
process:

- a heartbeat thread wakes every 10 ms: its longest gap is the longest anything held the GIL;
- a recall thread searches every 100 ms (``store.search``, what recall's vector step calls), each
  timed from when it was due (a client's request does not wait for the one before);
- a writer thread upserts one new point every 50 ms, deletes one and changes one payload every
  500 ms (the vector stage during the build: the journal the swap copies), timed the same way;
- a maintainer thread calls ``maintain()`` as ``api.index_maintainer`` does (every 0.5 s while
  a child builds).

Also times the copy a child build starts with, ``cp -r`` against ``shutil.copytree``, each with
the heartbeat beside it. Prints a table and writes ``ops/bench/results/probe_edge_build.json``.
Tooling, not product: run it under ``nice`` on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from pipeline.vectors import EdgeVectorStore, VectorPoint, VectorQuery, vector_payload
from pipeline.vectors.edge_swap import ChildBuildOptions
from pipeline.vectors.shard_generations import live_dir

RESULTS = Path(__file__).resolve().parent / "results"
DIMS = 384


class _Builds(logging.Handler):
    """The store's build log lines, with their figures (copy and swap pause)."""

    def __init__(self):
        super().__init__()
        self.records: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        keep = ("changes", "seconds", "copy_seconds", "swap_pause_seconds", "swap_steps_ms", "caught_up", "exit_status")
        self.records.append({"message": record.getMessage(), **{k: getattr(record, k) for k in keep if hasattr(record, k)}})


class _Beat(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.beats: list[tuple[float, float]] = []  # (time, gap beyond the 10 ms sleep)
        self.halt = threading.Event()

    def run(self):
        last = time.perf_counter()
        while not self.halt.wait(0.01):
            now = time.perf_counter()
            self.beats.append((now, now - last - 0.01))
            last = now

    def longest(self, start: float, end: float) -> float:
        return max((gap for at, gap in self.beats if start <= at <= end + 1), default=0.0)


def _point(vectors, i: int) -> VectorPoint:
    payload = vector_payload({"id": f"m{i}", "content": f"memory number {i}", "tags": [f"chat:{i % 50}"],
                              "type": "Context", "importance": 0.5, "timestamp": "2025-01-01T00:00:00+00:00"})
    return VectorPoint(f"m{i}", vectors[i].tolist(), payload)


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def quiet_searches(store: EdgeVectorStore, count: int = 100) -> float:
    """p50 ms of ``count`` searches at recall's fetch size, nothing else running (after a warm-up round)."""
    rng = np.random.default_rng(11)
    queries = [rng.standard_normal(DIMS).tolist() for _ in range(count)]
    times = []
    for round_ in range(2):
        for query in queries:
            began = time.perf_counter()
            store.search(VectorQuery(query, 50))
            times.append((time.perf_counter() - began) * 1000)
    return round(_percentile(times[count:], 50), 2)


def run_mode(mode: str, storage: str, indexes: str, points: int, nice: int, directory: str, vectors) -> dict:
    child = ChildBuildOptions(nice=nice, retry_s=3600) if mode in ("child", "codes-child") else None
    # codes-child: under the plain size, a codes-only build due at once
    plain_max = points * 10 if mode == "codes-child" else 1000
    path = f"{directory}/{mode}-{storage}-{indexes}/shard"
    store = EdgeVectorStore(path, DIMS, optimize_min_changes=1, plain_max_points=plain_max, child_build=child,
                            codes_build_min_changes=1, vectors_on_disk=storage == "disk",
                            payload_indexes_on_disk=indexes == "disk")
    store.ensure_collection()
    for start in range(0, points, 1000):
        store.upsert([_point(vectors, i) for i in range(start, min(points, start + 1000))])
    store.persist()
    search_before = quiet_searches(store)
    handler = _Builds()
    edge_log = logging.getLogger("pipeline.vectors.edge")
    edge_log.addHandler(handler)
    edge_log.setLevel(logging.INFO)

    beat = _Beat()
    halt = threading.Event()
    recalls: list[tuple[float, float]] = []  # (start, ms)
    writes: list[tuple[float, float]] = []
    rng = np.random.default_rng(7)

    def every(period: float, work, out: list) -> None:
        """``work`` on a fixed schedule (an open loop, as clients): each one's time runs from when
        it was due, so one that waits for the GIL, or behind a stalled one, counts what it waited."""
        due = time.perf_counter()
        while not halt.is_set():
            due += period
            halt.wait(max(0.0, due - time.perf_counter()))
            work()
            out.append((due, (time.perf_counter() - due) * 1000))

    def recall():
        every(0.1, lambda: store.search(VectorQuery(rng.standard_normal(DIMS).tolist(), 10)), recalls)

    def write():
        written = [points]

        def one():
            n = written[0]
            store.upsert([_point(vectors, n)])
            if n % 10 == 0:
                store.delete([f"m{n - points}"])
                store.set_payloads({f"m{n - points + 1}": {"importance": 0.9}})
            written[0] += 1
        every(0.05, one, writes)

    threads = [beat, threading.Thread(target=recall, daemon=True), threading.Thread(target=write, daemon=True)]
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    started = time.perf_counter()
    store._changes, store._last_change = max(store._changes, 1), 0.0  # due now, as after a quiet pause

    def maintain():
        store.maintain()
        while store.build_in_flight():  # api.index_maintainer: every tick while a child builds
            time.sleep(0.5)
            store.maintain()
    maintainer = threading.Thread(target=maintain, name="vector-maintenance")
    maintainer.start()
    maintainer.join()
    ended = time.perf_counter()
    time.sleep(1.0)
    halt.set()
    beat.halt.set()
    for thread in threads:
        thread.join(60)
    edge_log.removeHandler(handler)
    search_after = quiet_searches(store)

    during = [ms for at, ms in recalls if started <= at <= ended]
    written = [ms for at, ms in writes if started <= at <= ended]
    finished = next((r for r in handler.records if r["message"].startswith("edge index build finished")), {})
    first = next((r for r in handler.records if r["message"].startswith("edge index build started")), {})
    row = {
        "mode": mode, "storage": storage, "payload_indexes": indexes, "points": points, "build_s": round(ended - started, 1),
        "indexed_after": store.indexed_points(), "count_after": store.count(),
        "heartbeat_longest_gap_ms": round(beat.longest(started, ended) * 1000),
        "recalls_during": len(during), "recall_p50_ms": round(_percentile(during, 50), 1),
        "recall_p99_ms": round(_percentile(during, 99), 1), "recall_max_ms": round(max(during, default=0.0), 1),
        "writes_during": len(written), "write_max_ms": round(max(written, default=0.0), 1),
        "copy_s": first.get("copy_seconds"), "swap_pause_s": finished.get("swap_pause_seconds"),
        "caught_up": finished.get("caught_up"), "swap_steps_ms": finished.get("swap_steps_ms"),
        "search_p50_before_ms": search_before, "search_p50_after_ms": search_after,
    }
    store.close()
    return row


def copy_gil(source: str, directory: str) -> dict:
    """The longest heartbeat gap beside each way of copying the shard, and how long each took."""
    source = live_dir(source)  # the directory behind the shard's link (pipeline.vectors.shard_generations)
    out = {}
    for name, copy in (("cp -r", lambda dst: subprocess.run(["cp", "-r", "--", source, dst], check=True)),
                       ("shutil.copytree", lambda dst: shutil.copytree(source, dst))):
        beat = _Beat()
        beat.start()
        time.sleep(0.1)
        target = f"{directory}/copy-{len(out)}"
        began = time.perf_counter()
        copy(target)
        took = time.perf_counter() - began
        time.sleep(0.1)
        beat.halt.set()
        beat.join()
        out[name] = {"seconds": round(took, 2), "longest_gap_ms": round(max(g for _, g in beat.beats) * 1000)}
        shutil.rmtree(target)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.probe_edge_build", description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=40_000)
    parser.add_argument("--modes", default="child,in-process")
    parser.add_argument("--storage", default="disk", help="comma list: disk (EDGE_VECTORS_ON_DISK), ram")
    parser.add_argument("--payload-indexes", default="disk", help="comma list: disk (EDGE_PAYLOAD_INDEXES_ON_DISK), ram")
    parser.add_argument("--nice", type=int, default=10, help="the child's niceness (EMBEDDED_BACKGROUND_NICE)")
    args = parser.parse_args(argv)

    vectors = np.random.default_rng(1).standard_normal((args.points + 20_000, DIMS)).astype("float32")
    rows = []
    with tempfile.TemporaryDirectory(prefix="mempipe-edge-build-") as directory:
        for mode in args.modes.split(","):
            for storage in args.storage.split(","):
                for indexes in args.payload_indexes.split(","):
                    rows.append(run_mode(mode, storage, indexes, args.points, args.nice, directory, vectors))
                    print(json.dumps(rows[-1]), flush=True)
        first = rows[0]
        shard = f"{directory}/{first['mode']}-{first['storage']}-{first['payload_indexes']}/shard"
        copies = copy_gil(shard, directory)
    du = {"points": args.points, "rows": rows, "copy": copies}
    columns = ["mode", "storage", "payload_indexes", "build_s", "heartbeat_longest_gap_ms", "recalls_during", "recall_p50_ms", "recall_p99_ms",
               "recall_max_ms", "writes_during", "write_max_ms", "copy_s", "swap_pause_s", "caught_up",
               "search_p50_before_ms", "search_p50_after_ms"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row[c]) for c in columns) + " |")
    for row in rows:
        if row["swap_steps_ms"]:
            print(f"swap steps, {row['mode']}: {row['swap_steps_ms']} ms")
    for name, figures in copies.items():
        print(f"copy of the built shard, {name}: {figures['seconds']} s, longest heartbeat gap {figures['longest_gap_ms']} ms")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "probe_edge_build.json").write_text(json.dumps(du, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
