"""One enrichment pass over a batch of memories, with every collaborator passed in.

For each memory: its type (unless the client gave one), its entities (as ``entity:`` tags
and ``metadata.entities``), a summary when it is long, its content fingerprint; then, for the
batch, exact-duplicate groups and ``PRECEDED_BY`` chains. The vector payloads are refreshed
afterwards so tag-scoped searches (``expand_entities``) see the entity tags.

Re-running it on the same memory rewrites the same values: entity tags it added before are
tracked in ``entity_tags`` and replaced, never accumulated, and edges are merged.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

import orjson

from pipeline.relationships import Link, merge_links
from pipeline.enrichment.classifier import TypeClassifier, TypeResult
from pipeline.enrichment.entities import EntityExtractor
from pipeline.enrichment.scopes import content_fingerprint, scope_tags
from pipeline.enrichment.sequence import Placed, SequenceLinker
from pipeline.enrichment.stats import EnrichmentStats
from pipeline.enrichment.store import apply_enrichment, regroup_duplicates
from pipeline.enrichment.summaries import Summarizer
from pipeline.graph import GraphStore, metadata_search_text
from pipeline.records import tag_prefixes
from pipeline.relations import BY_NAME

MAX_ENTITY_TAGS = 32  # a memory naming more is a list, not a statement about each name
SIMILAR_TO = BY_NAME["SIMILAR_TO"]


@dataclass(frozen=True)
class EnrichmentPolicy:
    scope_prefixes: tuple[str, ...]
    summary_min_chars: int


@dataclass
class BatchOutcome:
    done: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    conflicted: list[str] = field(default_factory=list)
    payload_ids: list[str] = field(default_factory=list)
    classification: Counter = field(default_factory=Counter)
    last_error: str | None = None


def _count(result: TypeResult, counter: Counter) -> str | None:
    if result.llm_attempted:
        counter["llm_attempts"] += 1
        counter["llm_successes" if result.source == "llm" else "fallbacks"] += 1
    if result.source == "pattern":
        counter["pattern_classifications"] += 1
    return result.error


class Enricher:
    def __init__(
        self,
        graph: GraphStore,
        stats: EnrichmentStats,
        classifier: TypeClassifier,
        summarizer: Summarizer,
        entities: EntityExtractor,
        linker: SequenceLinker,
        policy: EnrichmentPolicy,
        send_payloads: Callable[[list[str]], Any],
        requeue: Callable[[list[str]], Any],
    ):
        self._graph = graph
        self._stats = stats
        self._classifier = classifier
        self._summarizer = summarizer
        self._entities = entities
        self._linker = linker
        self._policy = policy
        self._send_payloads = send_payloads
        self._requeue = requeue

    def run(self, memory_ids: list[str]) -> BatchOutcome:
        now = datetime.now(timezone.utc)
        at = now.isoformat()
        ids = list(dict.fromkeys(memory_ids))
        self._stats.started(ids)
        memories = self._graph.get_memories(ids)
        outcome = BatchOutcome(missing=[m for m in ids if m not in memories])
        found = [memories[m] for m in ids if m in memories]

        rows, old_hashes = [], {}
        extracted = self._entities.extract([m["content"] for m in found]) if found else []
        for memory, entities in zip(found, extracted):
            props = self._properties(memory, entities, at, outcome)
            rows.append({"id": memory["id"], "seen": memory.get("updated_at"), "props": props})
            old_hashes[memory["id"]] = memory.get("content_hash")
        written = apply_enrichment(self._graph, rows)
        outcome.conflicted = [r["id"] for r in rows if r["id"] not in written]
        outcome.done = [r["id"] for r in rows if r["id"] in written]
        written_rows = [r for r in rows if r["id"] in written]

        # Exact duplicates: the groups each memory joined and, if its content changed, left.
        hashes = {r["props"]["content_hash"] for r in written_rows}
        hashes |= {h for m, h in old_hashes.items() if h and m in written}
        changed = regroup_duplicates(self._graph, list(hashes))
        duplicates = [Link(member, original, 1.0) for member, original in changed if original]
        merge_links(self._graph, SIMILAR_TO, duplicates, at, extra={"exact_duplicate": True})

        placed = [
            Placed(r["id"], scope, _epoch(memories[r["id"]]))
            for r in written_rows
            for scope in scope_tags(r["props"]["tags"], self._policy.scope_prefixes)
        ]
        if placed:
            self._linker.link(placed, at, now.timestamp())

        outcome.payload_ids = list(dict.fromkeys(outcome.done + [member for member, _ in changed]))
        if outcome.payload_ids:
            self._send_payloads(outcome.payload_ids)
        if outcome.conflicted:
            self._requeue(outcome.conflicted)
        self._stats.finished(outcome.done + outcome.missing, outcome.classification, outcome.last_error, at)
        return outcome

    def _properties(self, memory: dict[str, Any], entities, at: str, outcome: BatchOutcome) -> dict[str, Any]:
        content = memory["content"]
        previous_entity_tags = set(memory.get("entity_tags") or [])
        user_tags = [t for t in memory.get("tags") or [] if t not in previous_entity_tags]
        entity_tags = [t for t in entities.tags if t not in user_tags][:MAX_ENTITY_TAGS]
        tags = user_tags + entity_tags

        metadata = dict(memory.get("metadata") or {})
        found = entities.as_metadata()
        if found:
            metadata["entities"] = found
        elif previous_entity_tags:
            metadata.pop("entities", None)  # ours from an earlier version of the content

        props: dict[str, Any] = {
            "tags": tags,
            "tag_prefixes": tag_prefixes(tags),
            "entity_tags": entity_tags,
            "metadata_json": orjson.dumps(metadata).decode(),
            "metadata_text": metadata_search_text(metadata),  # what the metadata sidecar searches
            "content_hash": content_fingerprint(content, scope_tags(user_tags, self._policy.scope_prefixes)),
            "enriched_at": at,
            "summary": None,
            "summary_source": None,
        }
        if memory.get("type_source") != "explicit":
            result = self._classifier.classify(content)
            error = _count(result, outcome.classification)
            outcome.last_error = error or outcome.last_error
            props.update(type=result.type, confidence=result.confidence, type_source=result.source)
        if len(content) > self._policy.summary_min_chars:
            props["summary"], props["summary_source"] = self._summarizer.summarize(content)
        return props


def _epoch(memory: dict[str, Any]) -> float:
    stamp = memory.get("timestamp")
    return datetime.fromisoformat(stamp).timestamp() if stamp else 0.0
