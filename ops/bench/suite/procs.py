"""Resident memory and CPU time of processes, read from /proc (psutil is not a dependency)."""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ops.redis_servers import cpu_seconds as process_cpu_seconds

PROC = Path("/proc")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of one process so far (0.0 once it is gone)."""
    return process_cpu_seconds(pid) or 0.0


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


@dataclass(frozen=True)
class ChildUsage:
    peak_rss_kib: int
    cpu_seconds: float


def wait_measured(process: subprocess.Popen, poll_s: float = 0.05) -> ChildUsage:
    """Wait for a child; its own peak RSS (VmHWM, polled until it exits) and CPU time.

    Not ``ru_maxrss`` from ``wait4``: Linux carries the high-water mark of the address space
    a process had before ``exec`` into it, and Python starts children with vfork, whose
    pre-exec address space is the parent's, so that figure is the parent's RSS whenever the
    parent is the larger (measured: a 13 MiB child of a 314 MiB parent reports 314 MiB).
    VmHWM only grows, so the last reading misses at most the last ``poll_s`` of the child.
    """
    peak = 0
    while True:
        peak = max(peak, peak_rss_kib(process.pid) or 0)
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            process.returncode = os.waitstatus_to_exitcode(status)
            return ChildUsage(peak, usage.ru_utime + usage.ru_stime)
        time.sleep(poll_s)


def cmdline(pid: int) -> list[str]:
    try:
        return [a for a in (PROC / str(pid) / "cmdline").read_bytes().decode(errors="replace").split("\0") if a]
    except OSError:
        return []


def _stat_fields(pid: int) -> list[str] | None:
    """``/proc/<pid>/stat`` from field 3 (the state) on; None once the process is gone."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    return stat.rsplit(")", 1)[1].split()


def _parent(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[1])


def alive(pid: int) -> bool:
    """Is ``pid`` a running process (not gone, not a zombie waiting to be reaped)?"""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def group_members(groups: set[int]) -> list[int]:
    """Running processes whose process group is one of ``groups``."""
    found = []
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None and fields[0] != "Z" and int(fields[2]) in groups:
                found.append(int(entry.name))
    return found


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


def descendants(root: int) -> list[int]:
    """Every descendant of ``root``."""
    return list(tree(root))


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
