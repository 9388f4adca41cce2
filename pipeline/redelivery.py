"""A dead worker's messages go back to their queues on a clock, not by chance.

Dramatiq's Redis broker keeps every fetched message in the fetching process's ack set
(``<ns>:__acks__.<broker id>.<queue>``) until it is acknowledged, and stamps the process's
heartbeat (``<ns>:__heartbeats__``) on every broker command. A process silent for
``HEARTBEAT_TIMEOUT_MS`` is presumed dead; the broker's *maintenance* then moves the messages
of its ack set for one queue back onto that queue. Dramatiq runs maintenance on a random one
in a thousand commands, for the command's queue only. Consumers that poll every few
milliseconds make that frequent enough; consumers woken by a token (``pipeline.wakeups``) and
waiting up to ``QUEUE_POLL_MS`` between fetches issue a few commands a second per queue, so a
killed worker's messages would wait long on a hot queue and far longer on a cold one.

Here every process that runs a Dramatiq worker also runs maintenance on each declared queue
and delay queue every ``HEARTBEAT_TIMEOUT_MS / 4``, on a thread of its own, whether its
consumers are busy or idle. The bound on redelivery follows (``redelivery_bound_s``): the
killed process is presumed dead ``HEARTBEAT_TIMEOUT_MS`` after its last command, the next
round hands its messages back within a quarter of that, and an idle consumer fetches them at
its next fetch (``QUEUE_POLL_MS`` on the write path, ``COLD_POLL_MS`` elsewhere). A queue
whose consumers are all busy gets them when one frees, as any queued message. Dramatiq's
random maintenance still runs as well; it only ever comes sooner.
"""

from __future__ import annotations

import logging
import threading

import dramatiq
import redis

log = logging.getLogger(__name__)

MAINTAIN_COMMAND = "maintain"  # the broker's dispatch script runs maintenance, then nothing else
ROUNDS_PER_HEARTBEAT_TIMEOUT = 4


def maintenance_interval_s(heartbeat_timeout_ms: int) -> float:
    return heartbeat_timeout_ms / 1000 / ROUNDS_PER_HEARTBEAT_TIMEOUT


def redelivery_bound_s(heartbeat_timeout_ms: int, fetch_wait_ms: int) -> float:
    """Longest a killed worker's message waits before an idle consumer of its queue takes it
    again: presumed dead, then the next maintenance round, then that consumer's next fetch."""
    return heartbeat_timeout_ms / 1000 + maintenance_interval_s(heartbeat_timeout_ms) + fetch_wait_ms / 1000


class PeriodicRedelivery(dramatiq.Middleware):
    """Runs the broker's maintenance on every queue every ``interval_s`` in each worker process.

    The web process runs one Dramatiq worker per queue it consumes; one thread serves them all
    (started with the first, stopped with the last).
    """

    def __init__(self, interval_s: float):
        self.interval_s = interval_s
        self._lock = threading.Lock()
        self._workers = 0
        self._stop: threading.Event | None = None
        self._thread: threading.Thread | None = None

    def after_worker_boot(self, broker, worker):
        with self._lock:
            self._workers += 1
            if self._thread is None:
                self._stop = threading.Event()
                self._thread = threading.Thread(
                    target=self._run, args=(broker, self._stop), name="redelivery", daemon=True)
                self._thread.start()

    def before_worker_shutdown(self, broker, worker):
        with self._lock:
            self._workers -= 1
            if self._workers > 0 or self._thread is None:
                return
            stop, thread = self._stop, self._thread
            self._stop = self._thread = None
        stop.set()
        thread.join(timeout=10)

    def _run(self, broker, stop: threading.Event) -> None:
        # A round at boot too: a worker started after a crash hands back at once the messages
        # of processes already presumed dead.
        while True:
            try:
                broker.maintain()
            except redis.RedisError as exc:
                # The consumers see the same outage and reconnect; the next round retries.
                log.warning("queue maintenance failed: %s", exc)
            if stop.wait(self.interval_s):
                return
