"""The clock process: enqueues the scheduled maintenance cycles, exactly once per interval.

The schedule and the exactly-once claim are ``pipeline.maintenance.schedule``'s; this process
ticks it and sends each claimed cycle to the maintenance queue.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from typing import Callable

import redis

from pipeline.config import Settings, get_settings
from pipeline.maintenance.schedule import Clock, ScheduledJob, cycle_intervals
from pipeline.observability.logs import configure_logging
from pipeline.store_wait import wait_for_stores

log = logging.getLogger("mempipe.clock")


def _start_cycle(kind: str) -> Callable[[], object]:
    def enqueue() -> object:
        from pipeline.actors.consolidate import start_cycle  # installs the broker on first use

        return start_cycle.send(kind, False, "clock", None, {"scheduled_at": time.time()})

    return enqueue


def scheduled_jobs(settings: Settings) -> list[ScheduledJob]:
    """The jobs the clock runs: the consolidation cycles and drift repair (sync)."""
    return [ScheduledJob(kind, seconds, _start_cycle(kind)) for kind, seconds in cycle_intervals(settings).items()]


def main() -> None:
    settings = get_settings()
    configure_logging(settings, role="clock")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    wait_for_stores(settings)
    jobs = scheduled_jobs(settings)
    if jobs:
        import pipeline.actors.consolidate  # noqa: F401  (load the actors now, not inside the first claim)
    clock = Clock(redis.Redis.from_url(settings.redis_url), jobs)
    log.info("clock started with %d job(s)", len(clock.jobs))
    while not stop.is_set():
        try:
            for name in clock.tick():
                log.info("enqueued %s", name)
        except redis.RedisError as exc:
            log.warning("clock tick skipped: broker unreachable (%s)", exc)
        stop.wait(settings.clock_tick_seconds)


if __name__ == "__main__":
    main()
