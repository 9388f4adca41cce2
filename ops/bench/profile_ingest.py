"""Where the ingest CPU goes: py-spy on the web and worker processes during one phase.

    python -m ops.bench.profile_ingest [--messages 10000] [--singles 2000] [--workers 1] [--out DIR]

Starts a fresh stack (as ``ops.bench.ingest`` does), attaches ``py-spy record`` (install it
into the venv; it is not a dependency) to the web process and to the worker processes,
runs the batch import and the single-write phase, and writes one collapsed-stack file per
process and phase (``<phase>-<part>.txt``, for flame graphs or ``--top``) plus a summary of
the heaviest functions (inclusive, percent of that process's samples).
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ops.bench.ingest import IndexBuilds, _wait_queues_empty, bench_batch, bench_singles
from ops.bench.gen_slack_export import generate
from ops.bench.stack import Servers, Stack
from ops.bench.suite.procs import group_members


def _spy(pid: int, out: Path, rate: int) -> subprocess.Popen:
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    return subprocess.Popen([py_spy, "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw",
                             "--output", str(out), "--nonblocking", "--gil"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def summarize(path: Path, top: int) -> list[str]:
    """Inclusive share of samples per function (each function counted once per stack)."""
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue  # py-spy's own notes
        n = int(count)
        frames = stack.split(";")
        total += n  # py-spy leaves idle threads out unless asked (--idle)
        for frame in {re.sub(r":\d+\)$", ")", f) for f in frames}:
            inclusive[frame] += n
    lines = [f"{path.name}: {total} busy samples"]
    lines += [f"  {n * 100 / max(total, 1):5.1f}%  {frame}" for frame, n in inclusive.most_common(top)]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.profile_ingest")
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--singles", type=int, default=2_000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--rate", type=int, default=200, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=45)
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="mempipe-profile-")))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    export = args.out / "export"
    generate(export, args.messages)
    servers = Servers.start(args.out / "servers")
    # Index builds considered every 2 s, and the previous phase's build waited for (as in
    # ops.bench.ingest): a build inside a phase would be profiled as that phase's work.
    stack = Stack.create(servers, EMBEDDING_PROVIDER="hash", EDGE_OPTIMIZE_INTERVAL_S="2",
                         BACKPRESSURE_MAX_PENDING="20000", ACTOR_MAX_RETRIES="12")
    report: list[str] = []
    try:
        stack.start_web(timeout=120)
        stack.start_worker(processes=args.workers, threads=2)
        with stack.client() as api:
            api.post("/memory", json={"content": "warm-up"})
        time.sleep(2)
        phases = [("batch", lambda: bench_batch(stack, export, 1800, servers))]
        if args.singles:
            phases.append(("single", lambda: bench_singles(stack, args.singles, 8, 1800, servers)))
        builds, previous_end = IndexBuilds(stack), None
        for phase, run in phases:
            _wait_queues_empty(stack, 600)
            if previous_end is not None:
                builds.settle(previous_end, start_within=15, timeout=600)
            targets = {"web": stack.web.pid}
            for i, pid in enumerate(p for w in stack.workers for p in group_members({w.pid}) if p != w.pid):
                targets[f"worker{i}"] = pid
            spies = {part: (_spy(pid, args.out / f"{phase}-{part}.txt", args.rate), args.out / f"{phase}-{part}.txt")
                     for part, pid in targets.items()}
            time.sleep(1)
            result = run()
            previous_end = builds.mark()
            for spy, _ in spies.values():
                spy.send_signal(signal.SIGINT)
            for spy, _ in spies.values():
                spy.wait(30)
            report.append(f"== {phase}: {result['rate']}/s, CPU ms per memory {result['cpu_ms_per_memory']}")
            for _, path in spies.values():
                if path.exists():
                    report += summarize(path, args.top)
    finally:
        stack.stop()
        servers.stop()
    text = "\n".join(report)
    (args.out / "summary.txt").write_text(text)
    print(text)
    print(f"\ncollapsed stacks in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
