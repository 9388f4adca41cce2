"""Maintenance runs as Redis records: what ran, what it found, how long it took.

A run (one consolidation cycle, one sync, one re-embed) is a chain of small step messages;
each step records its own counts under its sequence number, so a redelivered step
overwrites its earlier record instead of counting twice. The run's result is the sum of
its steps, computed once when the last step finishes. Kept on the broker's Redis, never on
the stores. Keys (all prefixed ``mempipe:maint:``):

- ``run:<id>`` — hash: kind, dry_run, trigger, status, started_at, finished_at, duration_s, result,
  phases (the names of the cycle's phases as the process that started the run knew them)
- ``run:<id>:steps`` — hash: ``<phase>:<seq>`` → JSON ``{"counts": {...}, "samples": {...}}``
- ``run:<id>:state:*`` — whatever a cycle keeps between its steps (cluster centres, members)
- ``active:<kind>`` — the run holding a cycle's lock (expires after MAINTENANCE_RUN_TTL_HOURS)
- ``active:<kind>:dry`` — the same for dry runs: one at a time, but never in a real run's way
- ``last:<kind>`` — the latest finished run of each kind (for /health's drift report)
- ``history`` — ids of finished runs, newest first, trimmed to MAINTENANCE_HISTORY_SIZE
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
import redis

if TYPE_CHECKING:
    from pipeline.config import Settings

PREFIX = "mempipe:maint:"
HISTORY_KEY = PREFIX + "history"
RUN_RECORD_TTL_SECONDS = 30 * 86_400
SAMPLES_PER_KIND = 10

QUEUED, RUNNING, COMPLETE, SKIPPED, FAILED = "queued", "running", "complete", "skipped", "failed"
# A run that stopped on purpose before changing anything it judged unsafe to change (the sync guard).
REFUSED = "refused"
FINISHED = frozenset({COMPLETE, SKIPPED, FAILED, REFUSED})


def new_run_id() -> str:
    return uuid.uuid4().hex


def run_key(run_id: str) -> str:
    return f"{PREFIX}run:{run_id}"


def lock_key(kind: str, dry_run: bool) -> str:
    return f"{PREFIX}active:{kind}" + (":dry" if dry_run else "")


def state_key(run_id: str, name: str) -> str:
    return f"{PREFIX}run:{run_id}:state:{name}"


@dataclass(frozen=True)
class Run:
    id: str
    kind: str
    dry_run: bool
    trigger: str
    status: str
    started_at: float
    params: dict[str, Any]
    hold_released: bool = False  # a request for the same cycle let this scheduled run go on at once
    # The cycle's phase names as the process that started the run knew them (None: a run
    # started before they were recorded). A step message names its phase by number only.
    phases: tuple[str, ...] | None = None

    @classmethod
    def from_hash(cls, run_id: str, data: dict[bytes, bytes]) -> "Run":
        return cls(
            id=run_id,
            kind=data[b"kind"].decode(),
            dry_run=data.get(b"dry_run") == b"1",
            trigger=data.get(b"trigger", b"").decode(),
            status=data.get(b"status", b"").decode(),
            started_at=float(data.get(b"started_at") or data.get(b"queued_at") or time.time()),
            params=orjson.loads(data.get(b"params") or b"{}"),
            hold_released=data.get(b"hold_released") == b"1",
            phases=tuple(orjson.loads(data[b"phases"])) if b"phases" in data else None,
        )


def merge_steps(steps: list[dict[str, Any]]) -> dict[str, Any]:
    """Sum the counts of a run's steps; keep a few sample ids per kind of finding."""
    counts: Counter[str] = Counter()
    samples: dict[str, list[str]] = {}
    for step in steps:
        counts.update(step.get("counts") or {})
        for kind, ids in (step.get("samples") or {}).items():
            bucket = samples.setdefault(kind, [])
            bucket += [i for i in ids if i not in bucket][: SAMPLES_PER_KIND - len(bucket)]
    return {"counts": dict(sorted(counts.items())), "samples": samples}


class RunStore:
    def __init__(self, client: redis.Redis, history_size: int, lock_ttl_seconds: float):
        self._redis = client
        self._history_size = history_size
        self._lock_ttl = max(1, int(lock_ttl_seconds))

    @classmethod
    def from_settings(cls, client: redis.Redis, settings: Settings) -> RunStore:
        return cls(client, settings.maintenance_history_size, settings.maintenance_run_ttl_hours * 3600)

    @property
    def redis(self) -> redis.Redis:
        return self._redis

    def create(self, run_id: str, kind: str, dry_run: bool, trigger: str, params: dict[str, Any] | None = None) -> None:
        """Record a queued run (idempotent: a second call leaves the first record)."""
        key = run_key(run_id)
        fields = {
            "kind": kind,
            "dry_run": "1" if dry_run else "0",
            "trigger": trigger,
            "status": QUEUED,
            "queued_at": time.time(),
            "params": orjson.dumps(params or {}),
        }
        pipe = self._redis.pipeline(transaction=False)
        for name, value in fields.items():
            pipe.hsetnx(key, name, value)
        pipe.expire(key, RUN_RECORD_TTL_SECONDS)
        pipe.execute()

    def get(self, run_id: str) -> Run | None:
        data = self._redis.hgetall(run_key(run_id))
        return Run.from_hash(run_id, data) if data and b"kind" in data else None

    def holder(self, kind: str, dry_run: bool) -> str | None:
        """The run holding the lock that a run of ``kind`` (dry or not) would need, if any."""
        holder = self._redis.get(lock_key(kind, dry_run))
        return holder.decode() if holder is not None else None

    def start(self, run: Run) -> bool:
        """Take the cycle's lock and mark the run running.

        False when another run of the same kind holds the lock: two clocks, or a manual run
        while a scheduled one is going, never run a cycle twice at once. Dry runs have a lock
        of their own: a dry run walks the whole store as a real one does, so they are bounded
        the same way (one at a time per cycle), without ever holding a real run back.
        """
        lock = lock_key(run.kind, run.dry_run)
        if not self._redis.set(lock, run.id, nx=True, ex=self._lock_ttl):
            holder = self._redis.get(lock)
            if holder is None or holder.decode() != run.id:  # a redelivered start holds it already
                return False
        self._redis.hset(run_key(run.id), "status", RUNNING)
        self._redis.hsetnx(run_key(run.id), "started_at", time.time())
        return True

    def pin_phases(self, run_id: str, names: list[str]) -> None:
        """Record the cycle's phase names the run's steps are numbered by (the first call wins:
        a redelivered start of the same run keeps them)."""
        self._redis.hsetnx(run_key(run_id), "phases", orjson.dumps(names))

    def record_step(self, run_id: str, phase: int, seq: int, counts: dict[str, int], samples: dict[str, list[str]]) -> None:
        key = run_key(run_id) + ":steps"
        self._redis.hset(key, f"{phase}:{seq}", orjson.dumps({"counts": counts, "samples": samples}))
        self._redis.expire(key, RUN_RECORD_TTL_SECONDS)

    def add_held(self, run_id: str, seconds: float) -> None:
        """Count time a scheduled run's step was held back for the pipeline (``held_s`` in its view)."""
        self._redis.hincrbyfloat(run_key(run_id), "held_s", seconds)

    def release_hold(self, run_id: str) -> None:
        """Let a held scheduled run go on at once (someone asked for the same cycle)."""
        self._redis.hset(run_key(run_id), "hold_released", 1)

    def finish(self, run: Run, status: str = COMPLETE, reason: str | None = None) -> dict[str, Any]:
        """Sum the steps into the run's result, release the lock, add it to the history (once)."""
        key = run_key(run.id)
        steps = [orjson.loads(v) for v in self._redis.hvals(key + ":steps")]
        result = merge_steps(steps)
        now = time.time()
        started = float(self._redis.hget(key, "started_at") or now)
        fields: dict[str, Any] = {
            "status": status,
            "finished_at": now,
            "duration_s": round(now - started, 3),
            "result": orjson.dumps(result),
        }
        if reason:
            fields["reason"] = reason
        if status != SKIPPED:
            # The lock goes before the status says finished: whoever sees the run settled may
            # start the next one at once.
            lock = lock_key(run.kind, run.dry_run)
            holder = self._redis.get(lock)
            if holder is not None and holder.decode() == run.id:
                self._redis.delete(lock)
        first = self._redis.hsetnx(key, "finished_once", 1)
        self._redis.hset(key, mapping=fields)
        if first:
            pipe = self._redis.pipeline(transaction=False)
            pipe.lpush(HISTORY_KEY, run.id)
            pipe.set(f"{PREFIX}last:{run.kind}", run.id)
            pipe.ltrim(HISTORY_KEY, 0, self._history_size - 1)
            pipe.execute()
            self._cleanup_state(run.id)
        return result

    def counts_so_far(self, run_id: str) -> dict[str, int]:
        """The counts of the steps recorded until now (a later phase deciding on an earlier one's findings)."""
        steps = [orjson.loads(v) for v in self._redis.hvals(run_key(run_id) + ":steps")]
        return merge_steps(steps)["counts"]

    def _cleanup_state(self, run_id: str) -> None:
        keys = list(self._redis.scan_iter(match=state_key(run_id, "*"), count=500))
        for start in range(0, len(keys), 500):
            self._redis.delete(*keys[start : start + 500])

    def view(self, run_id: str) -> dict[str, Any] | None:
        """A run as the API reports it."""
        data = self._redis.hgetall(run_key(run_id))
        if not data or b"kind" not in data:
            return None
        text = {k.decode(): v.decode() for k, v in data.items()}
        view: dict[str, Any] = {
            "run_id": run_id,
            "kind": text["kind"],
            "dry_run": text.get("dry_run") == "1",
            "trigger": text.get("trigger"),
            "status": text.get("status"),
        }
        for name in ("queued_at", "started_at", "finished_at"):
            if name in text:
                view[name] = _iso(float(text[name]))
        if "duration_s" in text:
            view["duration_s"] = float(text["duration_s"])
        if "held_s" in text:
            view["held_s"] = round(float(text["held_s"]), 1)
        if "reason" in text:
            view["reason"] = text["reason"]
        if "result" in text:
            view.update(orjson.loads(text["result"]))
        if params := orjson.loads(text.get("params") or "{}"):
            view["params"] = params
        return view

    def started_before(self, run: Run, kinds: list[str]) -> list[str]:
        """The other runs holding a cycle's lock (dry or not) that started before ``run``; ties
        go by run id, so of two runs each sees the other on one side only."""
        locks = [lock_key(kind, dry_run) for kind in kinds for dry_run in (False, True)]
        holders = sorted({h.decode() for h in self._redis.mget(locks) if h is not None} - {run.id})
        pipe = self._redis.pipeline(transaction=False)
        for holder in holders:
            pipe.hmget(run_key(holder), "started_at", "queued_at")
        ahead = []
        for holder, (started, queued) in zip(holders, pipe.execute()):
            since = started or queued
            if since is not None and (float(since), holder) < (run.started_at, run.id):
                ahead.append(holder)
        return ahead

    def in_progress(self, kinds: list[str]) -> list[dict[str, Any]]:
        """The runs holding a cycle's lock now, dry or not (a held scheduled run shows its ``held_s``)."""
        holders = [self.holder(kind, dry_run) for kind in kinds for dry_run in (False, True)]
        return [v for v in (self.view(i) for i in holders if i) if v is not None]

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        ids = [i.decode() for i in self._redis.lrange(HISTORY_KEY, 0, (limit or self._history_size) - 1)]
        return [v for v in (self.view(i) for i in ids) if v is not None]

    def last_finished(self, kind: str) -> dict[str, Any] | None:
        run_id = self._redis.get(f"{PREFIX}last:{kind}")
        return self.view(run_id.decode()) if run_id else None


def _iso(epoch: float) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(epoch, tz=timezone.utc).isoformat()


def run_store(services) -> RunStore:
    """The run store of a process's ``Services``, bounded by its settings."""
    return RunStore.from_settings(services.broker_redis, services.settings)
