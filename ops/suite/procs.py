"""Resident memory and CPU time of processes, read from /proc (psutil is not a dependency)."""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")
_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of one process so far (0.0 once it is gone)."""
    try:
        fields = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK


def _status_kib(pid: int, field: str) -> int | None:
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def rss_kib(pid: int) -> int | None:
    return _status_kib(pid, "VmRSS")


def peak_rss_kib(pid: int) -> int | None:
    """The kernel's high-water mark of the process's resident set (VmHWM)."""
    return _status_kib(pid, "VmHWM")


def cmdline(pid: int) -> list[str]:
    try:
        return [a for a in (PROC / str(pid) / "cmdline").read_bytes().decode(errors="replace").split("\0") if a]
    except OSError:
        return []


def _parent(pid: int) -> int | None:
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    return int(stat.rsplit(")", 1)[1].split()[1])


def tree(root: int) -> dict[int, int]:
    """Every descendant of ``root``, mapped to its parent."""
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            parent = _parent(int(entry.name))
            if parent is not None:
                children.setdefault(parent, []).append(int(entry.name))
    out, stack = {}, [root]
    while stack:
        parent = stack.pop()
        for child in children.get(parent, []):
            out[child] = parent
            stack.append(child)
    return out


def role(args: list[str]) -> str:
    """Which part of the embedded default a process is, from its command line."""
    text = " ".join(args)
    if "uvicorn" in text:
        return "web"
    if "dramatiq" in text or "pipeline.actors" in text:
        return "enricher" if args and args[-1] == "enrich" else "worker"
    if "ops.clock" in text:
        return "clock"
    if "redis-server" in text:
        return "redis-server (broker, graph)"
    return "other"
