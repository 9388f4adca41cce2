"""Background stages (enrichment, SIMILAR_TO) wait while the write path has work.

A memory is recallable once persisted, embedded and indexed; enrichment (types, entities,
summaries, PRECEDED_BY chains) and SIMILAR_TO linking improve it afterwards. On a small
machine they compete with the write path for the same cores: the model's embedding calls in
the workers, the vector writes in the process that owns the shard. So before a background
message runs, it waits while many writes are not yet recallable (a bulk import) or while
writes are still arriving (a stream of single writes), up to a bound, then runs anyway. The
message stays unacknowledged while it waits, so a crash redelivers it. The settings are the
``SIMILAR_TO_DEFER_*`` ones, named after the stage that waited first.
"""

from __future__ import annotations

import time
from typing import Callable

from pipeline.broker import any_held, write_path_busy
from pipeline.stages import ENRICH_QUEUE, SIMILARITY_QUEUE
from pipeline.stopping import pause


def yield_to_writes(backlog: Callable[[], int], bound: int, max_wait_s: float, sleep: Callable[[float], None] | None = None,
                    arriving: Callable[[], bool] = lambda: False) -> float:
    """Wait while more than ``bound`` writes are not yet recallable, or while ``arriving``
    says writes are still on their way; at most ``max_wait_s``. Returns the seconds waited.

    The backlog bound covers a bulk import; ``arriving`` covers a stream of single writes,
    whose backlog stays small. A write stuck in the backlog (dead-lettered) holds nothing up
    for long: the wait ends when writes stop arriving.
    """
    sleep = sleep or time.sleep
    waited, step = 0.0, 0.25
    while waited < max_wait_s and ((bound > 0 and backlog() > bound) or arriving()):
        sleep(step)
        waited += step
    return waited


def write_path_active(svc) -> Callable[[], bool]:
    """Writes still on their way: queued within the quiet window, or held by a write-path
    queue. The second covers the end of a bulk import: once the importer stops, the arrival
    key expires within the quiet window and the backlog falls under the bound while the last
    batches are still being persisted, embedded and indexed."""
    def active() -> bool:
        return svc.tracker.writes_arriving() or write_path_busy(svc.broker_redis)
    return active


def wait_for_quiet_writes(svc, also_wait: Callable[[], bool] = lambda: False) -> float:
    """The background stages' wait, with the shipped settings (SIMILAR_TO_DEFER_*)."""
    s = svc.settings
    # SIMILAR_TO_DEFER_QUIET_MS=0 turns the arrival condition off, the queue condition with it.
    active = write_path_active(svc) if s.similar_to_defer_quiet_ms > 0 else (lambda: False)
    # A stopping worker does not sit out the wait: the message goes back to its queue (pipeline.stopping).
    return yield_to_writes(svc.tracker.inflight_count, s.similar_to_defer_backlog, s.similar_to_defer_max_s,
                           sleep=pause, arriving=lambda: active() or also_wait())


def pipeline_busy(svc) -> bool:
    """Writes arriving or not yet recallable, or enrichment or SIMILAR_TO messages held: what a
    scheduled maintenance run waits out (``pipeline.actors.consolidate``). Counted by memories
    and by the background queues, not by the vector queue, which holds maintenance's own steps."""
    return (svc.tracker.writes_arriving() or svc.tracker.inflight_count() > 0
            or any_held(svc.broker_redis, (ENRICH_QUEUE, SIMILARITY_QUEUE)))
