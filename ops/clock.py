"""The clock process: enqueues scheduled actors, exactly once per interval.

Several clocks may run (a deploy overlap, a second dyno): each due job is claimed by
recording its run time in one optimistic Redis transaction (WATCH/MULTI) that fails for every
clock but one, so only one clock enqueues it per interval. The last run of each job is kept in Redis, so a restart does not re-run early.
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


# Cycle → the setting holding its interval (0 = not scheduled). Forget is 0 by default.
CYCLE_INTERVALS = {
    "sync": "sync_interval_seconds",
    "decay": "consolidation_decay_interval_seconds",
    "creative": "consolidation_creative_interval_seconds",
    "cluster": "consolidation_cluster_interval_seconds",
    "forget": "consolidation_forget_interval_seconds",
}


def _start_cycle(kind: str) -> Callable[[], object]:
    def enqueue() -> object:
        from pipeline.actors.consolidate import start_cycle  # installs the broker on first use

        return start_cycle.send(kind, False, "clock", None, {"scheduled_at": time.time()})

    return enqueue


def cycle_intervals(settings: Settings) -> dict[str, float]:
    """Scheduled cycles and their intervals in seconds (unscheduled ones left out)."""
    intervals = {kind: float(getattr(settings, field)) for kind, field in CYCLE_INTERVALS.items()}
    return {kind: seconds for kind, seconds in intervals.items() if seconds > 0}


def scheduled_jobs(settings: Settings) -> list[ScheduledJob]:
    """The jobs the clock runs: the consolidation cycles and drift repair (sync)."""
    return [ScheduledJob(kind, seconds, _start_cycle(kind)) for kind, seconds in cycle_intervals(settings).items()]


def last_runs(client: redis.Redis) -> dict[str, float]:
    """When the clock last enqueued each job (epoch seconds)."""
    return {k.decode(): float(v) for k, v in client.hgetall(LAST_RUN_KEY).items()}


class Clock:
    def __init__(self, client: redis.Redis, jobs: list[ScheduledJob]):
        self._redis = client
        self._jobs = jobs

    def claim(self, job: ScheduledJob, now: float) -> bool:
        """True for exactly one caller per job per interval, however many clocks ask.

        Checking "due" and recording the run in one optimistic transaction (WATCH/MULTI) is
        what makes it exact: a separate check, claim and record let a second clock, between
        the first one's claim and its record, take the next slot seconds later.
        """
        with self._redis.pipeline() as pipe:
            try:
                pipe.watch(LAST_RUN_KEY)
                last = pipe.hget(LAST_RUN_KEY, job.name)
                if last is not None and now - float(last) < job.interval_seconds:
                    pipe.unwatch()
                    return False
                pipe.multi()
                pipe.hset(LAST_RUN_KEY, job.name, now)
                pipe.execute()
                return True
            except redis.WatchError:
                return False  # another clock recorded a run meanwhile; look again next tick

    def due(self, job: ScheduledJob, now: float) -> bool:
        last = self._redis.hget(LAST_RUN_KEY, job.name)
        return last is None or now - float(last) >= job.interval_seconds

    def tick(self, now: float | None = None) -> list[str]:
        now = time.time() if now is None else now
        ran = []
        for job in self._jobs:
            if self.due(job, now) and self.claim(job, now):
                try:
                    job.enqueue()
                except Exception:
                    # Not enqueued: give the interval back so the next tick (of any clock) retries.
                    last = self._redis.hget(LAST_RUN_KEY, job.name)
                    if last is not None and float(last) == now:
                        self._redis.hdel(LAST_RUN_KEY, job.name)
                    raise
                ran.append(job.name)
        return ran


def main() -> None:
    settings = get_settings()
    configure_logging(settings, role="clock")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    jobs = scheduled_jobs(settings)
    if jobs:
        import pipeline.actors.consolidate  # noqa: F401  (load the actors now, not inside the first claim)
    clock = Clock(redis.Redis.from_url(settings.redis_url), jobs)
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
