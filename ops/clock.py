"""The clock process: enqueues scheduled actors, exactly once per interval.

Several clocks may run (a deploy overlap, a second dyno): each due job is claimed with a
Redis ``SET NX`` on a key named after the job and its interval slot, so only one clock
enqueues it. The last run of each job is kept in Redis, so a restart does not re-run early.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from dataclasses import dataclass
from typing import Callable

import redis

from pipeline.config import Settings, get_settings
from pipeline.observability.logs import configure_logging

log = logging.getLogger("mempipe.clock")
LAST_RUN_KEY = "mempipe:clock:last_run"


@dataclass(frozen=True)
class ScheduledJob:
    name: str
    interval_seconds: float
    enqueue: Callable[[], object]


def scheduled_jobs(settings: Settings) -> list[ScheduledJob]:
    """The jobs the clock runs. Consolidation and drift repair register here as they land."""
    return []


class Clock:
    def __init__(self, client: redis.Redis, jobs: list[ScheduledJob]):
        self._redis = client
        self._jobs = jobs

    def claim(self, job: ScheduledJob, now: float) -> bool:
        """True for exactly one caller per job per interval slot."""
        slot = int(now // job.interval_seconds)
        key = f"mempipe:clock:lock:{job.name}:{slot}"
        return bool(self._redis.set(key, "1", nx=True, ex=max(1, int(job.interval_seconds * 2))))

    def due(self, job: ScheduledJob, now: float) -> bool:
        last = self._redis.hget(LAST_RUN_KEY, job.name)
        return last is None or now - float(last) >= job.interval_seconds

    def tick(self, now: float | None = None) -> list[str]:
        now = time.time() if now is None else now
        ran = []
        for job in self._jobs:
            if self.due(job, now) and self.claim(job, now):
                job.enqueue()
                self._redis.hset(LAST_RUN_KEY, job.name, now)
                ran.append(job.name)
        return ran


def main() -> None:
    settings = get_settings()
    configure_logging(settings, role="clock")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    clock = Clock(redis.Redis.from_url(settings.redis_url), scheduled_jobs(settings))
    log.info("clock started with %d job(s)", len(clock._jobs))
    while not stop.is_set():
        try:
            for name in clock.tick():
                log.info("enqueued %s", name)
        except redis.RedisError as exc:
            log.warning("clock tick skipped: broker unreachable (%s)", exc)
        stop.wait(settings.clock_tick_seconds)


if __name__ == "__main__":
    main()
