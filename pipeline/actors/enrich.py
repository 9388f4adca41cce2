"""Enrichment stage: types, entities, summaries, duplicates and PRECEDED_BY chains.

Runs on its own queue after a memory is indexed (so it is already recallable), and waits
while the write path has work (``pipeline.background``): NER takes the cores the model needs. A message carries memory ids; the actor reads the current record
from the graph, so a redelivered or re-queued message simply recomputes the same result.
"""

from __future__ import annotations

from datetime import datetime, timezone

import dramatiq

from pipeline.actors.context import services
from pipeline.background import wait_for_quiet_writes
from pipeline.broker import ENRICH_QUEUE
from pipeline.drain import drain_bound, draining
from pipeline.enrichment.classifier import TypeClassifier
from pipeline.enrichment.enricher import Enricher, EnrichmentPolicy
from pipeline.enrichment.sequence import SequenceLinker
from pipeline.enrichment.summaries import Summarizer
from pipeline.services import Services


# Most memories one enrich message carries without an LLM: spaCy and the graph writes take
# milliseconds a memory, so such a message ends in seconds, and a stopping worker can finish it.
MESSAGE_MAX_ITEMS = 128


def message_size(svc: Services) -> int:
    """Most memories per enrich message: with an LLM each memory waits for a rate-limited call,
    so a message holds about one rate window's worth (LLM_RATE_LIMIT)."""
    return max(1, svc.settings.llm_rate_limit) if svc.chat is not None else MESSAGE_MAX_ITEMS


def queue_enrichment(svc: Services, memory_ids: list[str]) -> None:
    """Count the ids as pending, then enqueue them (with a failure callback for the DLQ case).

    A vector batch of hundreds becomes several messages: one message for all of them held an
    enrichment thread for as long as they all took, longer than a worker is given to stop.
    """
    if not memory_ids:
        return
    svc.enrichment_stats.queued(memory_ids)
    size = message_size(svc)
    for start in range(0, len(memory_ids), size):
        enrich_memories.send_with_options(args=(memory_ids[start : start + size],), on_failure=enrichment_failed)


def build_enricher(svc: Services) -> Enricher:
    from pipeline.actors.vectors import refresh_vector_payloads

    s = svc.settings
    chat = svc.chat
    return Enricher(
        graph=svc.graph,
        stats=svc.enrichment_stats,
        classifier=TypeClassifier(chat, s.classification_model),
        summarizer=Summarizer(s.summary_max_chars, chat, s.resolved_summary_model),
        entities=svc.entity_extractor,
        linker=SequenceLinker(svc.broker_redis, svc.graph),
        policy=EnrichmentPolicy(s.scope_prefixes, s.summary_min_chars),
        send_payloads=refresh_vector_payloads.send,
        requeue=lambda ids: queue_enrichment(svc, ids),
    )


def _drain_bound(svc: Services) -> int:
    """How many memories this call may gather from further queued enrich messages.

    Messages are as small as the vector batches that sent them (a few ids under single
    writes); spaCy costs markedly more per text in small batches than in large ones, and each
    message costs its own graph round trips. So a call takes the queued run of
    enrich messages behind it (``pipeline.drain``). Not while an LLM is configured: its
    calls wait on the network and the rate limit, and one thread draining the queue would
    leave the others idle. A retried message runs alone, so one bad memory cannot keep
    failing its neighbours.
    """
    return 0 if svc.chat is not None else drain_bound(svc.settings.enrich_drain_max_items)


@dramatiq.actor(queue_name=ENRICH_QUEUE)
def enrich_memories(memory_ids: list[str]) -> None:
    svc = services()
    wait_for_quiet_writes(svc)
    with draining(dramatiq.get_broker(), ENRICH_QUEUE, "enrich_memories", memory_ids, _drain_bound(svc)) as ids:
        build_enricher(svc).run(ids)


@dramatiq.actor(queue_name=ENRICH_QUEUE)
def enrichment_failed(message_data: dict, exception_data: dict) -> None:
    """Dramatiq's on_failure callback: called after *every* failed attempt.

    Dramatiq runs "after" hooks in reverse middleware order, so Retries has already counted
    this attempt: the message is dead-lettered (failed for good) once the count exceeds the
    maximum. Earlier attempts only record the error.
    """
    svc = services()
    memory_ids = (message_data.get("args") or [[]])[0]
    error = f"{exception_data.get('type', 'Error')}: {exception_data.get('message', '')}"
    final = message_data.get("options", {}).get("retries", 0) > svc.settings.actor_max_retries
    svc.enrichment_stats.failed(memory_ids, error, datetime.now(timezone.utc).isoformat(), final=final)
