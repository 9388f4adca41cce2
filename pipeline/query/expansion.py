"""Graph expansion after the seeds are chosen: one hop over relations, then entities.

Expansion thresholds (``expand_min_*``) apply to expanded memories only — seeds are never
filtered by them. Tag scope applies only with ``expand_respect_tags``; exclusion, time window,
type exclusion and validity always apply.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from pipeline.graph import Scope, TagFilter
from pipeline.query.candidates import Candidate, CandidateSources
from pipeline.query.filters import in_scope
from pipeline.query.graph_reads import Edge, neighbours
from pipeline.query.request import ExpansionOptions

log = logging.getLogger(__name__)

ENTITY_TAG = re.compile(r"^entity:(?P<kind>[a-z0-9_\-]+):(?P<slug>.+)$")
ENTITIES_REPORTED = 10
PER_ENTITY = 5


@dataclass
class RelationExpansion:
    expanded: list[Candidate] = field(default_factory=list)
    edges: dict[str, list[Edge]] = field(default_factory=dict)  # seed id → its edges (hydrates seeds)
    failed: bool = False


def expand_relations(
    sources: CandidateSources,
    seeds: list[Candidate],
    options: ExpansionOptions,
    scope: Scope,
    seen: set[str],
    admissible: Callable[[dict[str, Any]], bool],
) -> RelationExpansion:
    """Follow default-expand edges one hop from each seed, newest edge first."""
    outcome = RelationExpansion()
    try:
        outcome.edges = neighbours(
            sources.graph, [s.id for s in seeds], min_strength=options.min_strength, per_seed=options.relation_limit
        )
    except Exception as exc:
        log.warning("relation expansion skipped, graph unavailable: %s", exc)
        outcome.failed = True
        return outcome
    for seed in seeds:
        for edge in outcome.edges.get(seed.id, []):
            if len(outcome.expanded) >= options.expansion_limit:
                return outcome
            memory = edge.memory
            if memory["id"] in seen or float(memory.get("importance") or 0.0) < options.min_importance:
                continue
            if not in_scope(memory, scope, check_tags=options.respect_tags) or not admissible(memory):
                continue
            seen.add(memory["id"])
            outcome.expanded.append(Candidate(
                memory, "relation", "graph", relation=edge.strength or 0.0, match_score=edge.strength or 0.0,
                query=seed.query, relations=[edge.stub()],
                extra={"expanded_from": seed.id, "relation_type": edge.type},
            ))
    return outcome


def entity_keys(memories: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(entity tag, display name) pairs from ``entity:<kind>:<slug>`` tags and ``metadata.entities``."""
    found: dict[str, str] = {}
    for memory in memories:
        for tag in memory.get("tags") or []:
            match = ENTITY_TAG.match(tag.lower())
            if match:
                found.setdefault(tag.lower(), match["slug"].replace("-", " ").replace("_", " "))
        entities = (memory.get("metadata") or {}).get("entities")
        groups = entities.items() if isinstance(entities, dict) else [("people", entities)]
        for kind, names in groups:
            for name in names if isinstance(names, list) else [names]:
                if isinstance(name, str) and name.strip():
                    display = " ".join(name.lower().split())
                    found.setdefault(f"entity:{str(kind).lower()}:{display.replace(' ', '-')}", display)
    return list(found.items())


@dataclass
class EntityExpansion:
    expanded: list[Candidate] = field(default_factory=list)
    entities_found: list[str] = field(default_factory=list)


def expand_entities(
    sources: CandidateSources,
    origins: list[Candidate],
    vector: list[float] | None,
    options: ExpansionOptions,
    scope: Scope,
    seen: set[str],
    admissible: Callable[[dict[str, Any]], bool],
    entities_searched: int,
) -> EntityExpansion:
    """Memories tagged for the entities the seeds (and relation-expanded results) mention."""
    outcome = EntityExpansion()
    keys = entity_keys([c.memory for c in origins])
    outcome.entities_found = list(dict.fromkeys(name for _, name in keys))[:ENTITIES_REPORTED]
    for tag, name in keys[:entities_searched]:
        room = options.expansion_limit - len(outcome.expanded)
        if room <= 0:
            break
        entity_scope = Scope(TagFilter((tag,), "any", "exact"), scope.exclude_tags, scope.start_epoch,
                             scope.end_epoch, scope.excluded_types)
        try:
            memories = sources.tagged(vector, entity_scope, PER_ENTITY * 2)  # over-fetch: some may already be shown
        except Exception as exc:
            log.warning("entity expansion for %s skipped: %s", tag, exc)
            continue
        added = 0
        for memory in memories:
            if added >= min(PER_ENTITY, room):
                break
            if memory["id"] in seen or float(memory.get("importance") or 0.0) < options.min_importance:
                continue
            if options.respect_tags and not in_scope(memory, scope):
                continue
            if not admissible(memory):
                continue
            seen.add(memory["id"])
            added += 1
            outcome.expanded.append(Candidate(memory, "entity_expansion", "qdrant" if vector else "graph",
                                              extra={"expanded_from_entity": name}))
    return outcome
