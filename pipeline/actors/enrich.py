"""Enrichment stage: types, entities, summaries, duplicates and PRECEDED_BY chains.

Runs on its own queue after a memory is indexed (so it is already recallable), and waits
while the write path has work (``pipeline.background``): NER takes the cores the model needs. A message carries memory ids; the actor reads the current record
from the graph, so a redelivered or re-queued message simply recomputes the same result.
"""

from __future__ import annotations

from datetime import datetime, timezone

from pipeline.actor_context import services
from pipeline.background import wait_for_quiet_writes
from pipeline.enrichment.classifier import TypeClassifier
from pipeline.enrichment.enricher import Enricher, EnrichmentPolicy
from pipeline.enrichment.sequence import SequenceLinker
from pipeline.enrichment.summaries import Summarizer
from pipeline.services import Services
from pipeline.stages import draining_actor, send_enrich, send_refresh_payloads, stage_actor


def build_enricher(svc: Services) -> Enricher:
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
        send_payloads=send_refresh_payloads,
        requeue=lambda ids: send_enrich(svc, ids),
    )


def drain_max_items(svc: Services) -> int:
    """How many memories a call may gather from further queued enrich messages.

    Messages are as small as the vector batches that sent them (a few ids under single
    writes); spaCy costs more per text in small batches than in large ones, and each
    message costs its own graph round trips. So a call takes the queued run of enrich
    messages behind it (``pipeline.drain``). Not while an LLM is configured: its calls wait
    on the network and the rate limit, and one thread draining the queue would leave the
    others idle. A retried message runs alone (``drain_bound``), so one bad memory cannot
    keep failing its neighbours.
    """
    return 0 if svc.chat is not None else svc.settings.enrich_drain_max_items


@draining_actor("enrich_memories", drain_max_items, before=wait_for_quiet_writes)
def enrich_memories(svc: Services, memory_ids: list[str]) -> None:
    """Enrich the memories from their current graph records (so a redelivery recomputes the same)."""
    build_enricher(svc).run(memory_ids)


@stage_actor("enrichment_failed")
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
