"""Short, in-process retries around store calls.

A blip (a dropped connection, a failover) is absorbed here in well under a second; a longer
outage raises, and Dramatiq's Retries middleware takes over with exponential backoff until
the store is back or the message reaches the dead-letter queue.
"""

from __future__ import annotations

import redis
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

TRANSIENT_ERRORS = (ConnectionError, TimeoutError, OSError, redis.ConnectionError, redis.TimeoutError)

store_call = retry(
    reraise=True,
    stop=stop_after_attempt(3),
    wait=wait_exponential(multiplier=0.05, max=0.5),
    retry=retry_if_exception_type(TRANSIENT_ERRORS),
)
