"""Where a benchmark phase's time goes: per-process CPU, sampled while it runs.

``CpuMeter`` (``ops.bench.ingest``) gives each part's CPU for a whole phase; this samples the
same processes every ``interval`` seconds (``/proc/<pid>/stat``, no psutil), so a phase can be
split in time (while the importer was sending, and the *tail* after it finished) and each part
can be seen as the bound or not:

- ``cpu_s`` / ``ms_per_memory``: CPU seconds of the part (all its processes), and per memory;
- ``cores``: its mean CPU over the window (1.0 = one core busy all along);
- ``saturated``: the share of sample intervals in which one of its processes used ≥ 90 % of a
  core: a Python process at that level is the pipeline's bound for that while (one GIL);
- ``runq_wait_s``: seconds its threads waited on a run queue for a CPU (``schedstat``): on a
  shared machine, the time the other jobs took from it. Read at the start and the end only.

Parts are named lists of pids, re-resolved at each sample (a worker's processes are found
through its session, an importer appears and exits mid-phase); a pid that exits keeps the last
CPU it was seen with.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

from ops.bench.suite.procs import cpu_seconds

PROC = Path("/proc")


def runqueue_wait_s(pid: int) -> float:
    """Seconds the threads of ``pid`` have waited for a CPU so far (0.0 when unreadable)."""
    total = 0
    try:
        tasks = list((PROC / str(pid) / "task").iterdir())
    except OSError:
        return 0.0
    for task in tasks:
        try:
            total += int((task / "schedstat").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            pass
    return total / 1e9


class BusySampler:
    """Samples the CPU of named process groups on a thread of its own; ``mark(name)`` names a
    moment (``import_done``) so ``report`` can split the phase there."""

    SATURATED = 0.9

    def __init__(self, parts: dict[str, Callable[[], list[int]]], interval: float = 0.2, resolve_every: float = 2.0):
        self._parts = dict(parts)
        self._interval = interval
        # Resolving a part can scan /proc (a worker's process group): not at every sample, the
        # sampler shares the cores it measures.
        self._resolve_every = resolve_every
        self._resolved: dict[str, list[int]] = {}
        self._resolved_at = float("-inf")
        self._extra: dict[str, list[int]] = {}
        self._last: dict[int, float] = {}
        self._samples: list[tuple[float, dict[str, float], dict[str, float]]] = []  # when, cpu per part, max per-pid delta
        self._marks: dict[str, float] = {}
        self._halt = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="busy-sampler", daemon=True)
        self._wait_start: dict[str, float] = {}
        self._wait_end: dict[str, float] = {}

    def add(self, part: str, pid: int) -> None:
        """A process that appeared mid-phase (the importer)."""
        with self._lock:
            self._extra.setdefault(part, []).append(pid)

    def mark(self, name: str) -> None:
        self._marks[name] = time.monotonic()

    def _pids(self) -> dict[str, list[int]]:
        with self._lock:
            extra = {part: list(pids) for part, pids in self._extra.items()}
        if time.monotonic() - self._resolved_at >= self._resolve_every:
            for part, resolve in self._parts.items():
                try:
                    self._resolved[part] = list(resolve())
                except Exception:  # a part that cannot be resolved right now is simply not sampled
                    self._resolved[part] = []
            self._resolved_at = time.monotonic()
        pids = {part: list(found) for part, found in self._resolved.items()}
        for part, more in extra.items():
            pids[part] = pids.get(part, []) + more
        return pids

    def _sample(self) -> None:
        now = time.monotonic()
        cpu: dict[str, float] = {}
        peak: dict[str, float] = {}
        for part, pids in self._pids().items():
            total, top = 0.0, 0.0
            for pid in pids:
                seen = cpu_seconds(pid)
                previous = self._last.get(pid)
                if seen < (previous or 0.0):  # gone: keep what it was last seen with
                    seen = previous or 0.0
                self._last[pid] = seen
                total += seen
                if previous is not None:
                    top = max(top, seen - previous)
            cpu[part], peak[part] = total, top
        self._samples.append((now, cpu, peak))

    def _waits(self) -> dict[str, float]:
        return {part: sum(runqueue_wait_s(pid) for pid in pids) for part, pids in self._pids().items()}

    def _run(self) -> None:
        while not self._halt.is_set():
            self._sample()
            self._halt.wait(self._interval)

    def start(self) -> "BusySampler":
        self._wait_start = self._waits()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._wait_end = self._waits()
        self._halt.set()
        self._thread.join(5)
        self._sample()

    def report(self, memories: int, split: str | None = None) -> dict:
        """Per part, for the whole window and (with ``split``, a ``mark`` name) before and
        after that moment."""
        windows = {"all": (float("-inf"), float("inf"))}
        if split and split in self._marks:
            windows = {"all": windows["all"], "before_" + split: (float("-inf"), self._marks[split]),
                       "after_" + split: (self._marks[split], float("inf"))}
        out: dict = {}
        for window, (start, end) in windows.items():
            chosen = [s for s in self._samples if start <= s[0] <= end]
            if len(chosen) < 2:
                continue
            seconds = chosen[-1][0] - chosen[0][0]
            parts = {}
            for part in chosen[-1][1]:
                spent = chosen[-1][1].get(part, 0.0) - chosen[0][1].get(part, 0.0)
                intervals = [(b[2].get(part, 0.0), b[0] - a[0]) for a, b in zip(chosen, chosen[1:])]
                saturated = sum(1 for used, dt in intervals if dt > 0 and used / dt >= self.SATURATED)
                parts[part] = {"cpu_s": round(spent, 2), "ms_per_memory": round(spent * 1000 / max(memories, 1), 3),
                               "cores": round(spent / seconds, 2) if seconds > 0 else 0.0,
                               "saturated": round(saturated / max(len(intervals), 1), 2)}
            out[window] = {"seconds": round(seconds, 2), "parts": parts}
        if self._wait_start and self._wait_end:
            out["runq_wait_s"] = {part: round(max(self._wait_end.get(part, 0.0) - self._wait_start.get(part, 0.0), 0.0), 2)
                                  for part in self._wait_end}
        return out


def format_report(label: str, report: dict) -> list[str]:
    """Lines for a table: per window, each part's CPU s, ms per memory, cores, saturated share."""
    lines = []
    for window, data in report.items():
        if window == "runq_wait_s":
            continue
        cells = "  ".join(f"{part} {p['cpu_s']}s {p['ms_per_memory']}ms {p['cores']}c {p['saturated']:.0%}"
                          for part, p in data["parts"].items())
        lines.append(f"{label:<18} {window:<20} {data['seconds']:>6}s  {cells}")
    if "runq_wait_s" in report:
        waits = "  ".join(f"{part} {seconds}s" for part, seconds in report["runq_wait_s"].items())
        lines.append(f"{label:<18} {'waited for a CPU':<20} {'':>7}  {waits}")
    return lines
