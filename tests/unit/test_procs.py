"""A child's peak RSS is its own, not its parent's (ops.bench.suite.procs.wait_measured)."""

import subprocess
import sys

from ops.bench.suite.procs import wait_measured

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
