"""ops.bench.suite.procs: a child's peak RSS is its own, not its parent's (wait_measured); a process's
descendants, its process group and whether it still runs, read from /proc."""

import os
import subprocess
import sys
import time

from ops.bench.suite.procs import alive, descendants, group_members, wait_measured

MIB = 1024


def _child(mib: int) -> subprocess.Popen:
    code = f"b = bytearray({mib} * 1024 * 1024)\nfor i in range(0, len(b), 4096): b[i] = 1\nimport time; time.sleep(0.3)"
    return subprocess.Popen([sys.executable, "-c", code])


def test_peak_rss_is_the_childs_own_even_below_a_larger_parent():
    ballast = bytearray(300 * 1024 * 1024)  # the parent is far larger than its child
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    small = wait_measured(_child(20))
    large = wait_measured(_child(120))
    assert small.peak_rss_kib >= 20 * MIB and large.peak_rss_kib >= 120 * MIB
    assert small.peak_rss_kib < 100 * MIB  # wait4's ru_maxrss would say ~300 MiB here
    assert large.peak_rss_kib - small.peak_rss_kib >= 90 * MIB
    assert small.cpu_seconds > 0
    del ballast


def test_return_code_is_set():
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    wait_measured(process)
    assert process.returncode == 3


# A shell in a process group of its own, with a sleeping child of its own.
_SHELL_WITH_CHILD = "sleep 30 & echo $!; wait"


def test_descendants_group_members_and_alive_follow_a_process_tree():
    shell = subprocess.Popen(["sh", "-c", _SHELL_WITH_CHILD], stdout=subprocess.PIPE, text=True, process_group=0)
    child = int(shell.stdout.readline())
    try:
        assert child in descendants(shell.pid)
        assert sorted(group_members({shell.pid})) == sorted([shell.pid, child])
        assert os.getpid() not in group_members({shell.pid})
        assert alive(shell.pid) and alive(child)
    finally:
        os.killpg(shell.pid, 9)
        shell.wait()
    assert not alive(shell.pid)  # reaped: gone from /proc
    deadline = time.monotonic() + 10  # SIGKILL is delivered asynchronously; a zombie counts as gone
    while group_members({shell.pid}) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert group_members({shell.pid}) == [] and not alive(child)
