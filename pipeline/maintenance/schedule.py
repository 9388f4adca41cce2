"""The maintenance schedule: which cycles run how often, when each last ran, and claiming a run.

Several clocks may run (a deploy overlap, a second dyno): each due job is claimed by
recording its run time in one optimistic Redis transaction (WATCH/MULTI) that fails for every
clock but one, so only one clock enqueues it per interval. The last run of each job is kept in
Redis, so a restart does not re-run early, and ``GET /consolidate/status`` reads it from there.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from collections.abc import Callable

import redis

from pipeline.config import Settings

LAST_RUN_KEY = "mempipe:clock:last_run"

# Cycle → the setting holding its interval (0 = not scheduled). Forget is 0 by default.
CYCLE_INTERVALS = {
    "sync": "sync_interval_seconds",
    "decay": "consolidation_decay_interval_seconds",
    "creative": "consolidation_creative_interval_seconds",
    "cluster": "consolidation_cluster_interval_seconds",
    "forget": "consolidation_forget_interval_seconds",
}


@dataclass(frozen=True)
class ScheduledJob:
    name: str
    interval_seconds: float
    enqueue: Callable[[], object]


def cycle_intervals(settings: Settings) -> dict[str, float]:
    """Scheduled cycles and their intervals in seconds (unscheduled ones left out)."""
    intervals = {kind: float(getattr(settings, field)) for kind, field in CYCLE_INTERVALS.items()}
    return {kind: seconds for kind, seconds in intervals.items() if seconds > 0}


def last_runs(client: redis.Redis) -> dict[str, float]:
    """When the clock last enqueued each job (epoch seconds)."""
    return {k.decode(): float(v) for k, v in client.hgetall(LAST_RUN_KEY).items()}


class Clock:
    """Enqueues each due job, exactly once per interval however many clocks tick."""

    def __init__(self, client: redis.Redis, jobs: list[ScheduledJob]):
        self._redis = client
        self._jobs = jobs

    @property
    def jobs(self) -> list[ScheduledJob]:
        return list(self._jobs)

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
