"""Running one section's benchmark as a child process: timed, logged, bounded, never fatal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ops.bench.suite import machine, report, sources
from ops.bench.suite.sections import Section

LOGS = sources.RESULTS / "suite-logs"


def _stop(process: subprocess.Popen) -> None:
    """SIGINT first (the benchmarks stop their stacks in ``finally``), then SIGKILL the group."""
    for sig, grace in ((signal.SIGINT, 60), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(grace)
            return
        except subprocess.TimeoutExpired:
            continue


def _tail(path: Path, chars: int = 1500) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else ""


def run(section: Section, quick: bool, timeout_s: int | None = None) -> dict:
    """Run the section; return its report record (status ``failed`` with the error if it failed)."""
    args = section.command(quick)
    timeout_s = timeout_s or (section.quick_timeout_s if quick else section.full_timeout_s)
    LOGS.mkdir(parents=True, exist_ok=True)
    log = LOGS / f"{section.name}.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1", **section.env}
    record = {
        "command": "python " + " ".join(args), "mode": "quick" if quick else "full",
        "started_at": machine.now_iso(), "load_before": machine.load_average(), **machine.commit(),
    }
    started_wall, started = time.time(), time.monotonic()
    print(f"suite: {section.name}: {record['command']}", file=sys.stderr, flush=True)
    with log.open("w") as out:
        # Own process group: on a timeout the benchmark and everything it started can be stopped.
        process = subprocess.Popen([sys.executable, *args], cwd=machine.ROOT, env=env, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        try:
            process.wait(timeout_s)
            error = None if process.returncode == 0 else f"exit status {process.returncode}"
        except subprocess.TimeoutExpired:
            _stop(process)
            error = f"timed out after {timeout_s} s"
        except KeyboardInterrupt:
            _stop(process)
            raise
    record |= {"duration_s": round(time.monotonic() - started, 1), "load_after": machine.load_average(),
               "returncode": process.returncode, "log": os.path.relpath(log, machine.ROOT)}
    print(f"suite: {section.name}: {'ok' if error is None else error} in {record['duration_s']} s",
          file=sys.stderr, flush=True)
    if error:
        return report.failed(section, f"{error}; last output:\n{_tail(log)}", record)
    path = sources.newest(section.globs, since=started_wall - 1)
    if path is None:
        return report.failed(section, f"wrote no JSON matching {', '.join(section.globs)} in ops/bench/results/", record)
    data, source = sources.read(path)
    return report.from_source(section, data, source, record)
