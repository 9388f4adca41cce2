"""The pipeline's map: every actor, its queue, what it sends next, and the messages between them.

An actor module declares its actors through this map (``stage_actor``, ``draining_actor``)
and sends the next stage's message through it (``send_*``), by actor name over the broker:
no actor module imports another, so the stage graph below is the one place it is written.
``docs/architecture.md`` draws it.

The names of actors and queues and the shape of each message are a wire format: messages
already queued in a user's Redis are processed after an upgrade, so none of them changes
without a path for the old ones.

Items travel as TypedDicts rather than dataclasses: they are the wire dicts themselves, so a
batch of hundreds costs no conversion at each of the four stages it passes through.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Required, Sequence, TypedDict

import dramatiq
from dramatiq.middleware import CurrentMessage

from pipeline.actor_context import actor_context, services
from pipeline.drain import drain_bound, draining
from pipeline.embed_batches import embed_order
from pipeline.stopping import Stopping

if TYPE_CHECKING:
    from pipeline.services import Services

log = logging.getLogger(__name__)

# ── queues: one per stage, so each scales and is observed on its own ─────────────────────────
PERSIST_QUEUE = "persist"  # graph writes: the canonical record
EMBED_QUEUE = "embed"  # the expensive stage: many texts per provider call
VECTORS_QUEUE = "vectors"  # Qdrant writes; in the embedded default only the web process consumes it
ENRICH_QUEUE = "enrich"  # classification, entities, summaries, duplicates, PRECEDED_BY
# SIMILAR_TO needs vector searches, so it runs where the vectors are: like ``vectors``, only
# the web process consumes it in the embedded default (Qdrant Edge), on its own thread.
SIMILARITY_QUEUE = "similarity"
MAINTENANCE_QUEUE = "maintenance"  # access tracking, sync, consolidation
ALL_QUEUES = (PERSIST_QUEUE, EMBED_QUEUE, VECTORS_QUEUE, ENRICH_QUEUE, SIMILARITY_QUEUE, MAINTENANCE_QUEUE)
VECTOR_OWNER_QUEUES = frozenset({VECTORS_QUEUE, SIMILARITY_QUEUE})  # need the process that owns the vectors
HOT_QUEUES = frozenset({PERSIST_QUEUE, EMBED_QUEUE, VECTORS_QUEUE})  # the write path: a write waits on them


# ── messages ─────────────────────────────────────────────────────────────────────────────────
RecordMessage = dict[str, Any]  # a whole memory, ``MemoryRecord.to_message()``
MIGRATE_OP = "migrate"  # an item that copies a memory into a migration's target collection


class EmbedItem(TypedDict, total=False):
    """One memory on its way to the vector index (``pipeline.actors.persist.vector_work_item``)."""

    id: Required[str]
    op: Required[str]  # "store", "update" or MIGRATE_OP: what the tracker is told once indexed
    text: str  # what to embed; dropped once embedded
    payload: dict[str, Any]  # the point's payload (Qdrant server, or any sender but persist)
    edge_payload: dict[str, Any]  # the payload already in the Edge shard's layout (persist, with Edge)
    point_id: str  # the Edge point id derived from ``id``
    collections: list[str]  # only these collections (a migration's copy names its target)
    migration: str  # the migration run a copy belongs to


class VectorItem(EmbedItem, total=False):
    """An ``EmbedItem`` with its vectors: packed per collection, or one plain vector for the live one."""

    vectors_f32: dict[str, str]  # collection name -> base64 float32 (``pipeline.packing``)
    vector: list[float]  # a client's own embedding, or a cluster centre


class SimilarItem(TypedDict):
    """A memory just indexed, with its live vector, for SIMILAR_TO."""

    id: str
    vector_f32: str


# ── the map ──────────────────────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class Stage:
    actor: str  # the Dramatiq actor name: on the wire, never renamed
    queue: str
    sends: tuple[str, ...] = ()  # the actors it sends to next


STAGES: tuple[Stage, ...] = (
    # the write path
    Stage("persist_memories", PERSIST_QUEUE, ("embed_memories", "index_vectors")),
    Stage("update_memory", PERSIST_QUEUE, ("embed_memories", "index_vectors", "update_vector_payload")),
    Stage("delete_memories", PERSIST_QUEUE, ("drop_vectors",)),
    Stage("link_memories", PERSIST_QUEUE),
    Stage("embed_memories", EMBED_QUEUE, ("index_vectors",)),
    Stage("index_vectors", VECTORS_QUEUE, ("enrich_memories", "link_similar")),
    Stage("update_vector_payload", VECTORS_QUEUE),
    Stage("drop_vectors", VECTORS_QUEUE),
    # after a memory is recallable
    Stage("enrich_memories", ENRICH_QUEUE, ("refresh_vector_payloads", "enrich_memories")),
    Stage("enrichment_failed", ENRICH_QUEUE),  # enrich_memories' on_failure callback
    Stage("refresh_vector_payloads", VECTORS_QUEUE),
    Stage("link_similar", SIMILARITY_QUEUE),
    Stage("record_access", MAINTENANCE_QUEUE),
    # maintenance runs: a chain of one-page steps (pipeline.maintenance.cycles)
    Stage("start_cycle", MAINTENANCE_QUEUE, ("maintenance_step", "vector_step")),
    Stage("maintenance_step", MAINTENANCE_QUEUE,
          ("maintenance_step", "vector_step", "apply_payload_patches", "drop_vectors", "embed_memories", "index_vectors")),
    Stage("vector_step", VECTORS_QUEUE,
          ("maintenance_step", "vector_step", "apply_payload_patches", "drop_vectors", "embed_memories", "index_vectors")),
    Stage("mark_run_failed", MAINTENANCE_QUEUE, ("abandon_migration",)),  # the steps' on_retry_exhausted
    Stage("abandon_migration", VECTORS_QUEUE),
    Stage("apply_payload_patches", VECTORS_QUEUE),
)
BY_ACTOR: Mapping[str, Stage] = {stage.actor: stage for stage in STAGES}

# The actors declared through the map in this process, by name: ``send`` reaches an actor on
# the broker it was declared on, as ``actor.send`` would, whatever broker is global later.
_declared: dict[str, dramatiq.Actor] = {}


def _declare(fn: Callable[..., Any], actor_name: str) -> dramatiq.Actor:
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Stopping:
            put_back(actor.broker)

    actor = _declared[actor_name] = dramatiq.actor(run, actor_name=actor_name, queue_name=BY_ACTOR[actor_name].queue)
    return actor


def put_back(broker: dramatiq.Broker) -> None:
    """Send the current message again, unchanged (its retry count too); this delivery is then
    acknowledged as done (``pipeline.stopping``). Outside a worker there is nothing to put back."""
    message = CurrentMessage.get_current_message()
    if message is None:
        raise Stopping()
    broker.enqueue(message.copy())
    log.info("message put back on its queue: the worker is stopping",
             extra={"queue": message.queue_name, "actor": message.actor_name})


def stage_actor(actor_name: str) -> Callable[[Callable[..., Any]], dramatiq.Actor]:
    """Declare the function as the map's ``actor_name``, on the map's queue."""
    return lambda fn: _declare(fn, actor_name)


def draining_actor(actor_name: str, max_items: Callable[[Services], int],
                   before: Callable[[Services], None] | None = None) -> Callable[[Callable[[Services, list], None]], dramatiq.Actor]:
    """Declare ``handle(services, batch)`` as a batching stage (``pipeline.drain``).

    The actor's one argument is a list; a call also takes the queued run of the same actor's
    messages behind it, up to ``max_items(services)`` records, and hands ``handle`` them all
    as one batch. ``before`` runs first, while nothing extra is held (a background stage's
    wait for the write path).
    """
    stage = BY_ACTOR[actor_name]

    def declare(handle: Callable[[Services, list], None]) -> dramatiq.Actor:
        def consume(records: list) -> None:
            svc = services()
            if before is not None:
                before(svc)
            bound = drain_bound(max_items(svc))
            with draining(actor.broker, stage.queue, stage.actor, records, bound) as batch:
                handle(svc, batch)

        consume.__name__ = consume.__qualname__ = stage.actor
        consume.__module__, consume.__doc__ = handle.__module__, handle.__doc__
        actor = _declare(consume, stage.actor)
        return actor

    return declare


def send(actor_name: str, *args: Any, **options: Any) -> dramatiq.Message:
    """Enqueue a message for ``actor_name``, declared in this process (``import pipeline.actors``)."""
    actor = _declared.get(BY_ACTOR[actor_name].actor)
    if actor is None:
        raise RuntimeError(f"actor {actor_name!r} is not declared in this process: import pipeline.actors first")
    return actor.send_with_options(args=args, **options)


# ── send helpers: what one stage hands the next ──────────────────────────────────────────────
def message_chunks(items: list, size: int) -> list[list]:
    """``items`` cut into messages of at most ``size``.

    A batch of hundreds embedded in one message holds a worker thread for minutes with the
    local model: a stopping worker cannot finish it in time, and all of it is redone after
    a kill. One provider call (EMBED_BATCH_SIZE) per message keeps every message short;
    queued ones are drained back into full calls when the provider keeps up
    (``EMBED_DRAIN_MAX_ITEMS``).
    """
    return [items[start : start + size] for start in range(0, len(items), size)]


def send_embed(items: list[EmbedItem], batch_size: int, *, by_length: bool) -> None:
    """Cut into messages of ``batch_size``; ``by_length`` (EMBED_GROUP_BY_LENGTH): of similar
    text lengths, so each provider call pads little (``pipeline.embed_batches``)."""
    for chunk in message_chunks(embed_order(items) if by_length else items, batch_size):
        send("embed_memories", chunk)


def send_vectors(items: list[VectorItem]) -> None:
    send("index_vectors", items)


def send_update_payload(memory_id: str, payload: dict[str, Any]) -> None:
    send("update_vector_payload", memory_id, payload)


def send_refresh_payloads(memory_ids: list[str]) -> None:
    send("refresh_vector_payloads", memory_ids)


def send_patch_payloads(payloads: dict[str, dict[str, Any]]) -> None:
    send("apply_payload_patches", payloads)


def send_drop_vectors(memory_ids: list[str]) -> None:
    send("drop_vectors", memory_ids)


# Most memories one SIMILAR_TO message links. Each is one vector search on the process that owns
# the shard, and over a plain (unindexed) shard of 100k points a search scans them all: a
# vector batch of 500 in one message held the web's similarity thread for seconds, past what a
# stopping web process gives it.
SIMILAR_MESSAGE_MAX_ITEMS = 100


def send_similar(items: list[SimilarItem]) -> None:
    for chunk in message_chunks(items, SIMILAR_MESSAGE_MAX_ITEMS):
        send("link_similar", chunk)


# Most memories one enrich message carries without an LLM: spaCy and the graph writes take
# milliseconds a memory, so such a message ends in seconds, and a stopping worker can finish it.
ENRICH_MESSAGE_MAX_ITEMS = 128


def enrich_message_size(svc: Services) -> int:
    """Most memories per enrich message: with an LLM each memory waits for a rate-limited call,
    so a message holds about one rate window's worth (LLM_RATE_LIMIT)."""
    return max(1, svc.settings.llm_rate_limit) if svc.chat is not None else ENRICH_MESSAGE_MAX_ITEMS


def send_enrich(svc: Services, memory_ids: list[str]) -> None:
    """Count the ids as pending, then enqueue them (with a failure callback for the DLQ case).

    A vector batch of hundreds becomes several messages: one message for all of them held an
    enrichment thread for as long as they all took, longer than a worker is given to stop.
    """
    if not memory_ids:
        return
    svc.enrichment_stats.queued(memory_ids)
    for chunk in message_chunks(memory_ids, enrich_message_size(svc)):
        send("enrich_memories", chunk, on_failure="enrichment_failed")


def settle_copies(client: Any, items: Sequence[Mapping[str, Any]]) -> None:
    """Tell the migration cycle (through its hook) which of its copies the write path is done with."""
    copies = [item for item in items if item.get("migration")]
    if copies:
        actor_context().hooks.copies_settled(client, copies)


def without_deleted(svc: Services, items: list) -> list:
    """The items whose memories were not deleted while queued; deleted copies are settled."""
    deleted = svc.tracker.tombstoned([item["id"] for item in items])
    settle_copies(svc.broker_redis, [item for item in items if item["id"] in deleted])
    return [item for item in items if item["id"] not in deleted]
