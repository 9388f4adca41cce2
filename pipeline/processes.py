"""Ending a child process: asked first (SIGTERM), killed if it has not gone within a timeout."""

from __future__ import annotations

import subprocess


def end_process(process: subprocess.Popen, timeout: float) -> None:
    """SIGTERM ``process``, wait up to ``timeout`` seconds, then SIGKILL it; returns once it has
    exited (reaped, so no zombie is left). Nothing to do when it has exited already."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
