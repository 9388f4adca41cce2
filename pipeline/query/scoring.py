"""The hybrid score: ten weighted components plus the unweighted context bonus.

final_score = Σ weight_c × component_c + context_bonus (not normalised; may exceed 1).
See spec: recall-operations, "Hybrid Scoring System".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

from pipeline.config import ScoringWeights, Settings
from pipeline.query.keywords import stem

WEIGHTED_COMPONENTS = (
    "vector", "keyword", "metadata", "exact", "importance", "confidence", "recency", "tag", "relation", "relevance",
)
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class RecencyPolicy:
    window_days: float
    curve: str  # linear | exp

    @classmethod
    def from_settings(cls, settings: Settings) -> RecencyPolicy:
        return cls(settings.search_recency_window_days, settings.search_recency_curve)

    def score(self, timestamp: str | None, now: datetime) -> float:
        if not timestamp:
            return 0.0
        try:
            moment = datetime.fromisoformat(timestamp)
        except (TypeError, ValueError):
            return 0.0
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        age_days = max(0.0, (now - moment).total_seconds() / 86400)
        if self.curve == "exp":
            return 0.5 ** (age_days / self.window_days)
        return max(0.0, 1.0 - age_days / self.window_days)


_SUFFIXES = ("es", "s", "ing", "ed")


def _forms_stemming_to(target: str) -> set[str]:
    """Every word whose stem is ``target``: only the target, the target plus a suffix that
    ``stem`` strips, or ``-y`` made ``-ies`` can be; each candidate is confirmed with ``stem``."""
    forms = [target, *(target + suffix for suffix in _SUFFIXES)]
    if target.endswith("y"):
        forms.append(target[:-1] + "ies")
    return {form for form in forms if stem(form) == target}


@lru_cache(maxsize=16_384)
def _matching_words(keyword: str) -> frozenset[str]:
    """Content words that match ``keyword``: the keyword, or its stem, is their stem.

    Scoring runs for every candidate of every recall: looking these few words up in the
    content replaces stemming every content word of every candidate.
    """
    root = stem(keyword)
    return frozenset({keyword} | _forms_stemming_to(keyword) | _forms_stemming_to(root))


def keyword_score(keywords: list[str], content: str) -> float:
    """Share of query keywords found in the content (light stemming on both sides)."""
    if not keywords:
        return 0.0
    text = content.lower()
    words = set(_WORD.findall(text))
    found = sum(1 for k in keywords if not words.isdisjoint(_matching_words(k)) or (" " in k and k in text))
    return found / len(keywords)


def _metadata_terms(memory: dict[str, Any]) -> set[str]:
    terms = {t.lower() for t in memory.get("tags") or []}
    for value in (memory.get("metadata") or {}).values():
        if isinstance(value, str) and len(value) <= 200:
            terms.add(value.lower())
    return terms


def tag_score(keywords: list[str], memory: dict[str, Any], terms: set[str] | None = None) -> float:
    """min(1, matched / total): query keywords equal to one of the memory's tags or metadata terms."""
    if not keywords:
        return 0.0
    terms = _metadata_terms(memory) if terms is None else terms
    return min(1.0, sum(1 for k in keywords if k in terms) / len(keywords))


def exact_score(query: str | None, memory: dict[str, Any], terms: set[str] | None = None) -> float:
    """1.0 when the whole query equals one of the memory's tags or metadata terms."""
    if not query or not query.strip():
        return 0.0
    terms = _metadata_terms(memory) if terms is None else terms
    return 1.0 if query.strip().lower() in terms else 0.0


def _unit(value: Any) -> float:
    if type(value) is float and 0.0 <= value <= 1.0:  # the common case, without the conversions
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if math.isnan(number) else min(1.0, max(0.0, number))


def score_components(
    *,
    memory: dict[str, Any],
    query: str | None,
    keywords: list[str],
    vector: float,
    now: datetime,
    recency: RecencyPolicy,
    metadata: float = 0.0,
    relation: float = 0.0,
    context: float = 0.0,
) -> dict[str, Any]:
    terms = _metadata_terms(memory) if keywords or query else None  # tag and exact read the same terms
    components: dict[str, Any] = {
        "vector": _unit(vector),
        "keyword": keyword_score(keywords, memory.get("content") or ""),
        "metadata": _unit(metadata),
        "relation": _unit(relation),
        "tag": tag_score(keywords, memory, terms),
        "importance": _unit(memory.get("importance")),
        "confidence": _unit(memory.get("confidence")),
        "recency": recency.score(memory.get("timestamp"), now),
        "exact": exact_score(query, memory, terms),
        "relevance": _unit(memory.get("relevance_score")),
        "context": context,
    }
    components["evidence"] = max(components["vector"], components["keyword"], components["metadata"], components["exact"])
    components["relevance_gated"] = False
    return components


def final_score(components: dict[str, Any], weights: ScoringWeights) -> float:
    total = sum(getattr(weights, name) * components[name] for name in WEIGHTED_COMPONENTS)
    return total + components.get("context", 0.0)


# Components that say nothing about the query: ramped down for low-evidence results when the
# relevance gate is on, so an important but off-topic memory cannot fill a tag scope.
QUERY_INDEPENDENT = ("importance", "confidence", "recency", "tag")


def apply_relevance_gate(components: dict[str, Any], gate: float) -> None:
    """Scale query-independent components by evidence / gate when evidence falls below the gate."""
    evidence = components["evidence"]
    if gate <= 0 or evidence >= gate:
        return
    factor = evidence / gate
    for name in QUERY_INDEPENDENT:
        components[name] *= factor
    components["relevance_gated"] = True


def relative_recency(epochs: list[float | None]) -> list[float] | None:
    """Min-max normalised timestamps (newest 1.0), or None when there is no spread to rank by."""
    known = [e for e in epochs if e is not None]
    if len(known) < 2 or max(known) == min(known):
        return None
    low, span = min(known), max(known) - min(known)
    return [0.0 if e is None else (e - low) / span for e in epochs]


TEMPORAL_INTENT = re.compile(
    r"\b(latest|newest|current(ly)?|recent(ly)?|now|today|nowadays|up[- ]to[- ]date|most recent|"
    r"what changed|changed|changes|updated?|still|anymore|these days|this (week|month|year))\b",
    re.IGNORECASE,
)


def has_temporal_intent(query: str | None) -> bool:
    return bool(query and TEMPORAL_INTENT.search(query))
