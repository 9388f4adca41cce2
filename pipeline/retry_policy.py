"""How long a stage retries a failing message: long for an outage, short for bad data.

A store or the broker that cannot be reached is the outage a retry outlasts; anything else
(a record the store refuses, a bug) fails the same way every time, and retrying it for an
hour only delays its trip to the dead-letter queue. So Dramatiq's Retries middleware gets a
``retry_when`` that allows ``ACTOR_MAX_RETRIES`` for ordinary errors and, for connection
errors and timeouts, as many retries as ``ACTOR_UNAVAILABLE_RETRY_SECONDS`` of backoff take
(never fewer than ``ACTOR_MAX_RETRIES``).
"""

from __future__ import annotations

from typing import Callable

import httpx
import redis

from pipeline.config import Settings
from pipeline.errors import Unavailable

# Not OSError as a whole: a missing model file or a full disk is not an outage that passes.
UNAVAILABLE_ERRORS = (ConnectionError, TimeoutError, redis.ConnectionError, redis.TimeoutError,
                      httpx.TransportError, Unavailable)


def is_unavailable(exception: BaseException) -> bool:
    """Did this fail because something could not be reached (rather than on what it was given)?"""
    return isinstance(exception, UNAVAILABLE_ERRORS) or type(exception).__name__ in ("APIConnectionError", "APITimeoutError")


def retries_for_window(window_s: float, min_backoff_ms: int, max_backoff_ms: int) -> int:
    """Retries whose backoff adds up to at least ``window_s``.

    Dramatiq's backoff for retry n is ``min_backoff × 2^n`` capped at ``max_backoff``, less a
    random jitter of up to half; counting half of each keeps the window a lower bound.
    """
    elapsed_ms, retries = 0.0, 0
    while elapsed_ms < window_s * 1000:
        elapsed_ms += min(min_backoff_ms * 2 ** min(retries, 32), max_backoff_ms) / 2
        retries += 1
    return retries


def retry_when(settings: Settings) -> Callable[[int, BaseException], bool]:
    """The predicate for Dramatiq's Retries: may a message that failed ``retries`` times go again?"""
    ordinary = settings.actor_max_retries
    outage = max(ordinary, retries_for_window(settings.actor_unavailable_retry_seconds,
                                              settings.retry_min_backoff_ms, settings.retry_max_backoff_ms))

    def allowed(retries: int, exception: BaseException) -> bool:
        return retries < (outage if is_unavailable(exception) else ordinary)

    return allowed
