"""A batching consumer on top of Dramatiq: one actor call takes more messages of its queue.

Dramatiq hands an actor one message. Single writes reach the persist queue as small messages
(the web's coalescer gathers what arrives within a few milliseconds, a handful of records),
and every message then costs a graph round trip and a message at every later stage. When such
messages pile up, an actor takes more of them from its queue, up to a bound of records, and
handles them all as one batch, so every later stage gets one bigger message too. The persist,
embed, vector and enrich stages do this, each with its own bound (``*_DRAIN_MAX_ITEMS``):
whichever stage is the slowest is where messages queue, so that is where the batches form.
Nothing waits for a batch to fill: a call takes only what is already queued.

Acknowledgement stays exactly as safe as Dramatiq's own prefetch: the extra messages are
fetched with the broker's ``fetch`` command, which moves them into this worker's ack set, the
same set that holds its prefetched messages. They are acknowledged only after the batch is
written. If the write raises, they are put back on the queue (``requeue``) and the actor's
own message is retried by the Retries middleware; if the process dies, the broker's
maintenance hands the ack set of a dead worker back to the queue, as for any message it held.
Persisting is an idempotent upsert, so a batch written again after a crash changes nothing.

Only the run of same-actor messages at the head of the queue is taken (peeked first), so a
delete or an update queued behind a write is never overtaken by a later write of the same
memory. Should another consumer win the race between peek and fetch, a message of another
actor is put back untouched. Middleware hooks (metrics, trace ids) run for the actor's own
message only.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Protocol

import dramatiq
from dramatiq.middleware import CurrentMessage

from pipeline.observability.requestid import OPTION, message_id as current_message_id, request_id

log = logging.getLogger(__name__)
FETCH_CHUNK = 8  # messages per fetch: small, so a drain never holds much more than it uses


class DrainingBroker(Protocol):
    client: Any  # the broker's redis client
    namespace: str

    def do_fetch(self, queue_name: str, count: int) -> list[bytes | None]: ...
    def do_ack(self, queue_name: str, message_id: str) -> Any: ...
    def do_requeue(self, queue_name: str, *message_ids: str) -> Any: ...


@dataclass
class Drained:
    """Records taken from extra messages, and those messages' broker ids (to ack or return)."""

    records: list[dict[str, Any]] = field(default_factory=list)
    message_ids: list[str] = field(default_factory=list)
    traces: list[tuple[str, str | None]] = field(default_factory=list)  # (Dramatiq message id, request id)


def leading_run(broker: DrainingBroker, queue: str, actor_name: str, limit: int) -> int:
    """How many of the first ``limit`` queued messages are ``actor_name``'s, before any other.

    Reads the list and hash Dramatiq's Redis broker keeps per queue (``<ns>:<queue>`` and
    ``<ns>:<queue>.msgs``, the same keys /health counts); nothing is taken.
    """
    ids = broker.client.lrange(f"{broker.namespace}:{queue}", 0, limit - 1)
    if not ids:
        return 0
    run = 0
    for data in broker.client.hmget(f"{broker.namespace}:{queue}.msgs", ids):
        if data is None or dramatiq.Message.decode(data).actor_name != actor_name:
            break
        run += 1
    return run


def take_more(broker: DrainingBroker, queue: str, actor_name: str, have: int, max_items: int) -> Drained:
    """Fetch further ``actor_name`` messages from ``queue`` until ``max_items`` records are held."""
    drained = Drained()
    while have + len(drained.records) < max_items:
        # Every message holds at least one record: never fetch more messages than records wanted.
        wanted = leading_run(broker, queue, actor_name, min(FETCH_CHUNK, max_items - have - len(drained.records)))
        if not wanted:
            break
        raw = broker.do_fetch(queue, wanted)
        if not raw:
            break
        foreign: list[str] = []
        for data in raw:
            if data is None:  # acked by someone else meanwhile (a redelivered duplicate)
                continue
            message = dramatiq.Message.decode(data)
            redis_id = message.options["redis_message_id"]
            if message.actor_name == actor_name and len(message.args) == 1 and isinstance(message.args[0], list):
                drained.records += message.args[0]
                drained.message_ids.append(redis_id)
                drained.traces.append((message.message_id, message.options.get(OPTION)))
            else:
                foreign.append(redis_id)
        if foreign:
            broker.do_requeue(queue, *foreign)
        if len(raw) < wanted:
            break
    return drained


def drain_bound(max_items: int) -> int:
    """How many records the current actor call may gather from further queued messages.

    A retried message is handled alone: a record that makes the call fail then fails only
    its own message, never the neighbours it would otherwise be drained with. Outside a
    worker (no current message: a test calling the actor directly) nothing is drained.
    """
    message = CurrentMessage.get_current_message()
    if message is None or message.options.get("retries", 0):
        return 0
    return max_items


@contextmanager
def draining(broker: DrainingBroker, queue: str, actor_name: str, records: list[dict[str, Any]], max_items: int) -> Iterator[list[dict[str, Any]]]:
    """Yield ``records`` plus those of further queued messages; ack those only if the body succeeds."""
    if max_items <= len(records) or not hasattr(broker, "client"):
        yield records
        return
    drained = take_more(broker, queue, actor_name, len(records), max_items)
    try:
        yield records + drained.records
    except BaseException:
        if drained.message_ids:
            try:
                broker.do_requeue(queue, *drained.message_ids)
            except Exception:  # the ack set still holds them: maintenance returns them later
                log.warning("could not requeue %d drained messages; they return when this worker's acks expire",
                            len(drained.message_ids))
        raise
    for message_id in drained.message_ids:
        broker.do_ack(queue, message_id)
    carrier = current_message_id.get()
    for drained_id, drained_request in drained.traces:
        request_token, message_token = request_id.set(drained_request), current_message_id.set(drained_id)
        try:
            log.info("message processed", extra={"queue": queue, "drained_by": carrier})
        finally:
            request_id.reset(request_token)
            current_message_id.reset(message_token)
    if drained.message_ids:
        log.debug("persisted %d extra messages with this one", len(drained.message_ids))
