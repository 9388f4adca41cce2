"""Consumers of the write-path queues wait to be woken instead of polling.

Dramatiq's Redis consumer finds out about new messages by polling: a fetch script every few
milliseconds while its queue is empty. The write path needs its stages to react at once
(accepted → recallable), so polling would have to come every few milliseconds: every web and
worker process would run a couple of hundred fetch scripts a second at idle, and each stage
would still pick a message up only at its next poll.

Here a sender leaves a token on the queue's wake list (``<ns>:<queue>.wake``) with every
message, in one round trip after the enqueue; a consumer that finds its queue empty blocks
on that list (``BLPOP``, no CPU while it waits) and fetches as soon as a token arrives, or
after ``QUEUE_POLL_MS`` at the latest. The timeout keeps what polling gave: a message that
reached the queue without a token (handed back by the broker's maintenance from a worker
presumed dead, or sent by a process without this middleware) is fetched within it, and each
wait ends in a fetch, whose script is also the process's heartbeat (the broker presumes a
silent worker dead after ``HEARTBEAT_TIMEOUT_MS``, so the timeout must stay well below that).

Tokens only wake; they carry nothing. The list is trimmed to a few, so a burst of messages
wakes a few consumers (one fetches up to its prefetch) and a stale token costs one empty
fetch. Acknowledgements are unaffected: Dramatiq's worker threads ack as they finish.

Reacting at once has a price under load: a few messages that queue between fetches are
drained into one call (``pipeline.drain``); a consumer woken instantly takes them one by one,
in smaller calls (the vector stage's per-call work is the web's). So a consumer woken while a
stream is on (it took a message within ``STREAM_S``) waits ``LINGER_S`` before fetching; one
woken at idle fetches at once. Against polling: the same rate and CPU per write under single
writes, far fewer broker scripts at idle, and a waiting write answered sooner at idle
(docs/benchmarks-log.md, issue 6 session 17).
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Iterable

import dramatiq
import redis
from dramatiq.broker import Consumer, MessageProxy
from dramatiq.errors import ConnectionClosed

TOKENS_KEPT = 4  # a burst wakes up to this many waiting consumers of one queue


def wake_key(namespace: str, queue: str) -> str:
    return f"{namespace}:{queue}.wake"


def wake(client: redis.Redis, namespace: str, queue: str) -> None:
    """Leave a token for ``queue``'s consumers (one round trip)."""
    key = wake_key(namespace, queue)
    pipe = client.pipeline(transaction=False)
    pipe.lpush(key, 1)
    pipe.ltrim(key, 0, TOKENS_KEPT - 1)
    pipe.execute()


class WakeConsumers(dramatiq.Middleware):
    """After each enqueue on one of ``queues``, wake that queue's consumers."""

    def __init__(self, queues: Iterable[str]):
        self.queues = frozenset(queues)

    def after_enqueue(self, broker, message, delay):
        # A delayed message goes to the delay queue (``<q>.DQ``), which is polled; when it is
        # due it is enqueued again on its queue without a delay, and wakes it then.
        if delay is None and message.queue_name in self.queues:
            wake(broker.client, broker.namespace, message.queue_name)


# While messages keep coming (one was taken within STREAM_S), a woken consumer waits
# LINGER_S before it fetches, so the messages that arrive meanwhile are drained into the same
# call (pipeline.drain), as they were when a poll came every few milliseconds; at idle it
# fetches at once.
STREAM_S = 0.05
LINGER_S = 0.005
# A consumer holding its whole prefetch waits for a worker thread's ack at most this long
# before it looks again; acks, nacks and requeues through this consumer end the wait at once.
FULL_WAIT_S = 0.5


class WakingConsumer(Consumer):
    """Dramatiq's Redis consumer of one queue, waiting on the wake list when it finds nothing.

    ``inner`` must not sleep on a miss itself (it is made with a zero idle timeout): this
    wrapper's wait replaces that backoff. Everything else is the inner consumer's.
    """

    def __init__(self, inner: Consumer, wait_for_wakeup: Callable[[], bool], *, linger_s: float = LINGER_S,
                 stream_s: float = STREAM_S, full_wait_s: float = FULL_WAIT_S, clock=time.monotonic, sleep=time.sleep):
        self.inner = inner
        self._wait_for_wakeup = wait_for_wakeup
        self._linger_s, self._stream_s, self._full_wait_s = linger_s, stream_s, full_wait_s
        self._clock, self._sleep = clock, sleep
        self._last_message_at = float("-inf")
        self._slot_freed = threading.Event()

    def __next__(self) -> MessageProxy | None:
        self._slot_freed.clear()  # before the fetch: an ack from now on ends the wait below
        message = next(self.inner)
        if message is not None:
            self._last_message_at = self._clock()
            return message
        if self._full():
            # Holding its whole prefetch, the inner consumer fetched nothing, whatever is queued.
            # A wake token would not help it, and a worker thread's ack (no broker round trip
            # reaches this thread) frees a slot: wait for that, not for the wake list.
            self._slot_freed.wait(self._full_wait_s)
            return None
        try:
            woken = self._wait_for_wakeup()
        except redis.ConnectionError as exc:
            raise ConnectionClosed(exc) from None
        except redis.TimeoutError:
            return None  # the socket timed out before the wait did: fetch again
        if woken and self._clock() - self._last_message_at < self._stream_s:
            self._sleep(self._linger_s)
        return None

    def _full(self) -> bool:
        """Does the inner consumer hold as many messages as it may prefetch (Dramatiq's Redis consumer)?"""
        prefetch = getattr(self.inner, "prefetch", None)
        return prefetch is not None and self.inner.outstanding_message_count >= prefetch

    def ack(self, message: MessageProxy) -> None:
        self.inner.ack(message)
        self._slot_freed.set()

    def nack(self, message: MessageProxy) -> None:
        self.inner.nack(message)
        self._slot_freed.set()

    def requeue(self, messages: Iterable[MessageProxy]) -> None:
        self.inner.requeue(messages)
        self._slot_freed.set()

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str):
        return getattr(self.inner, name)  # outstanding_message_count, queue_name, …


def blocking_wait(client: redis.Redis, namespace: str, queue: str, timeout_s: float) -> Callable[[], bool]:
    """A wait for ``queue``'s next token, at most ``timeout_s``; True when a token came."""
    key = wake_key(namespace, queue)
    return lambda: client.blpop([key], timeout=timeout_s) is not None
