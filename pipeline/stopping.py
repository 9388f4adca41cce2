"""How long a stopping process lets its worker threads finish the messages they hold.

One budget for every process that runs Dramatiq workers, the launcher's ``dramatiq`` commands
and the web's in-process vector workers alike: half of ``EMBEDDED_STOP_TIMEOUT_S``, so that a
process still puts back what it fetched but had not started, flushes what it must, and exits
by itself before the launcher would kill it. A message still running when the budget is spent
stays unacknowledged, and the broker hands it back once its worker's heartbeat has lapsed
(docs/delivery.md).
"""

from __future__ import annotations


def worker_shutdown_ms(stop_timeout_s: float) -> int:
    return max(500, int(stop_timeout_s * 1000 * 0.5))
