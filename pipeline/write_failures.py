"""Writes whose message exhausted its retries: marked failed, out of the backlog, replayable.

Without this, a memory whose persist (or embed, or vector) message went to the dead-letter
queue stayed "pending" for ever and kept its place in the in-flight set, so a long outage
filled that set and backpressure answered 429 to every writer. The middleware below sees a
write-path message fail for good and marks the memories it carried ``failed`` with the
reason (``PipelineTracker.mark_failed``): GET /memory/{id} and /health show it, and the set
no longer counts it. The message itself stays in the dead-letter queue; replaying it
(``ops.deadletters``) puts those memories back in flight.
"""

from __future__ import annotations

import logging
from typing import Any

import dramatiq

from pipeline.tracking import PipelineTracker

log = logging.getLogger(__name__)

# The write-path actors whose first argument lists the memories they carry (records or items).
WRITE_ACTORS = frozenset({"persist_memories", "embed_memories", "index_vectors"})


def memory_ids(actor_name: str, args: tuple[Any, ...] | list[Any]) -> list[str]:
    """The memories a write-path message carries (none for any other message)."""
    if actor_name not in WRITE_ACTORS or not args or not isinstance(args[0], list):
        return []
    return [item["id"] for item in args[0] if isinstance(item, dict) and isinstance(item.get("id"), str)]


def failure_reason(message: Any, exception: BaseException) -> str:
    retries = message.options.get("retries", 0)
    return f"{message.actor_name} on {message.queue_name} failed after {retries} attempts: {type(exception).__name__}: {exception}"


class WriteFailures(dramatiq.Middleware):
    """Marks the memories of a write-path message that failed for good.

    Listed before Retries in the broker's middleware: Dramatiq runs ``after_*`` hooks in
    reverse order, so this one sees the message after Retries has decided to fail it.
    """

    def after_process_message(self, broker, message, *, result=None, exception=None):
        if exception is None or not message.failed:
            return
        ids = memory_ids(message.actor_name, message.args)
        if not ids:
            return
        reason = failure_reason(message, exception)
        marked = PipelineTracker(broker.client).mark_failed(ids, reason)
        log.error("write failed for good; kept in the dead-letter queue", extra={"memories": len(ids), "marked": marked, "reason": reason})
