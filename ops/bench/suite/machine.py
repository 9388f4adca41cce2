"""Where and when a figure was measured: the machine, the commit, the load around a section."""

from __future__ import annotations

import os
import platform
import subprocess
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def _ram_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict:
    return {
        "cores": os.cpu_count(),
        "ram_gib": _ram_gib(),
        "cpu": _cpu_model(),
        "platform": platform.platform(terse=True),
        "python": platform.python_version(),
    }


def commit() -> dict:
    """Short commit and whether the tree had uncommitted changes (a figure from a dirty tree says so)."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    sha = git("rev-parse", "--short", "HEAD") or "unknown"
    # ops/bench/results is where the suite writes: its own output must not mark the tree dirty.
    dirty = bool(git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)ops/bench/results"))
    return {"commit": sha, "dirty": dirty}


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []
