"""The request id: born in the API (or taken from ``X-Request-ID``), carried in every message.

One context variable holds it. On the web side asgi-correlation-id's middleware sets it per
request (it is that library's variable, so its log filter and ours agree); on the worker side
``TraceMiddleware`` sets it from the message being processed, so every message an actor sends
inherits it and the id follows a write through persist → embed → vectors.
"""

from __future__ import annotations

import logging
import time
from contextvars import ContextVar

from asgi_correlation_id.context import correlation_id as request_id
from dramatiq import Middleware

OPTION = "request_id"  # the message option that carries it

actor_name: ContextVar[str | None] = ContextVar("mempipe_actor", default=None)
message_id: ContextVar[str | None] = ContextVar("mempipe_message_id", default=None)

log = logging.getLogger("mempipe.pipeline")


class TraceMiddleware(Middleware):
    """Carries the request id in message options and logs each processed message once."""

    def __init__(self) -> None:
        self._started: dict[str, float] = {}

    def before_enqueue(self, broker, message, delay):
        current = request_id.get()
        if current and OPTION not in message.options:
            message.options[OPTION] = current

    def before_process_message(self, broker, message):
        # Worker threads are reused: every hook below resets what this one sets.
        request_id.set(message.options.get(OPTION))
        actor_name.set(message.actor_name)
        message_id.set(message.message_id)
        self._started[message.message_id] = time.monotonic()

    def after_process_message(self, broker, message, *, result=None, exception=None):
        started = self._started.pop(message.message_id, None)
        duration_ms = round((time.monotonic() - started) * 1000, 2) if started is not None else None
        fields = {"queue": message.queue_name, "duration_ms": duration_ms, "retries": message.options.get("retries", 0)}
        if exception is None:
            log.info("message processed", extra=fields)
        else:
            log.warning("message failed: %s", type(exception).__name__, extra=fields)
        request_id.set(None)
        actor_name.set(None)
        message_id.set(None)

    def after_skip_message(self, broker, message):
        self.after_process_message(broker, message)
