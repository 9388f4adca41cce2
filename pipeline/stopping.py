"""Stopping a worker process: how long its threads get, and how a long message gives way.

One budget for every process that runs Dramatiq workers, the launcher's ``dramatiq`` commands
and the web's in-process vector workers alike: half of ``EMBEDDED_STOP_TIMEOUT_S``, so that a
process still puts back what it fetched but had not started, flushes what it must, and exits
by itself before the launcher would kill it. A message still running when the budget is spent
stays unacknowledged, and the broker hands it back once its worker's heartbeat has lapsed
(docs/delivery.md).

Long stages do not wait for that. Once the worker is stopping (``StopNotice``), a stage that
reaches a point where it can give up cleanly (the background stages' wait for the write path,
between NER chunks) raises ``Stopping``; the stage map's actor wrapper (``pipeline.stages``)
then sends the message again, unchanged, and lets the worker acknowledge this delivery: the
work is back on its queue at once, neither lost nor counted as a failed attempt. As with
Dramatiq's own retries the copy is sent before the acknowledgement, so a process killed
between the two leaves the message twice, never not at all; every stage is idempotent.
"""

from __future__ import annotations

import threading

import dramatiq

_stopping = threading.Event()


class Stopping(Exception):
    """The worker is stopping: give the message back rather than finish it."""


def worker_shutdown_ms(stop_timeout_s: float) -> int:
    return max(500, int(stop_timeout_s * 1000 * 0.5))


def stopping() -> bool:
    return _stopping.is_set()


def check() -> None:
    """Raise ``Stopping`` if this process's worker is stopping."""
    if _stopping.is_set():
        raise Stopping()


def pause(seconds: float) -> None:
    """Sleep, or raise ``Stopping`` as soon as the worker starts stopping."""
    if _stopping.wait(seconds):
        raise Stopping()


class StopNotice(dramatiq.Middleware):
    """Tells this process's stages that its worker is stopping (``check``, ``pause``)."""

    def before_worker_boot(self, broker, worker):
        _stopping.clear()

    def before_worker_shutdown(self, broker, worker):
        _stopping.set()

    def after_worker_shutdown(self, broker, worker):
        _stopping.clear()
