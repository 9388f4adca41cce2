"""How relevant a memory still is, and what forgetting may do with it. Pure functions.

relevance = max(importance × floor,
                min(1, freshness × connectivity × quality))

- freshness: ``exp(-rate × age_days)``, or, when the memory was recalled since, the larger of
  that and ``access_weight × exp(-rate × days_since_access)`` — being used keeps it alive;
- connectivity: ``1 + relation_boost × min(relations, 10) / 10`` — linked memories matter more;
- quality: ``0.5 + 0.5 × confidence`` (confidence 0.5 when unknown).
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel

from pipeline.config import Settings

RELATION_SATURATION = 10


def _parse(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _days_between(earlier: datetime | None, now: datetime) -> float | None:
    return None if earlier is None else max(0.0, (now - earlier).total_seconds() / 86_400)


def _unit(value: Any, default: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return default if math.isnan(number) else min(1.0, max(0.0, number))


class DecayPolicy(BaseModel, frozen=True):
    """The CONSOLIDATION_* decay settings (``from_settings``; the defaults live there)."""

    rate_per_day: float
    access_weight: float
    relation_boost: float
    importance_floor: float

    @classmethod
    def from_settings(cls, settings: Settings) -> "DecayPolicy":
        return cls(
            rate_per_day=settings.consolidation_decay_rate,
            access_weight=settings.consolidation_access_weight,
            relation_boost=settings.consolidation_relation_boost,
            importance_floor=settings.consolidation_importance_floor,
        )

    def relevance(self, memory: dict[str, Any], relations: int, now: datetime) -> float:
        age = _days_between(_parse(memory.get("timestamp")), now) or 0.0
        freshness = math.exp(-self.rate_per_day * age)
        since_access = _days_between(_parse(memory.get("last_accessed")), now)
        if since_access is not None:
            freshness = max(freshness, self.access_weight * math.exp(-self.rate_per_day * since_access))
        connectivity = 1.0 + self.relation_boost * min(relations, RELATION_SATURATION) / RELATION_SATURATION
        quality = 0.5 + 0.5 * _unit(memory.get("confidence"), 0.5)
        floor = _unit(memory.get("importance"), 0.5) * self.importance_floor
        return round(max(floor, min(1.0, freshness * connectivity * quality)), 6)


KEEP, ARCHIVE, DELETE, PROTECTED = "keep", "archive", "delete", "protected"


class ForgetPolicy(BaseModel, frozen=True):
    """The CONSOLIDATION_* forget settings (``from_settings``; the defaults live there)."""

    archive_below: float
    delete_below: float
    grace_days: float
    protected_importance: float
    protected_types: frozenset[str]

    @classmethod
    def from_settings(cls, settings: Settings) -> "ForgetPolicy":
        return cls(
            archive_below=settings.consolidation_archive_threshold,
            delete_below=settings.consolidation_delete_threshold,
            grace_days=settings.consolidation_grace_period_days,
            protected_importance=settings.consolidation_protected_importance,
            protected_types=settings.protected_types | settings.excluded_types,
        )

    def verdict(self, memory: dict[str, Any], relevance: float, now: datetime) -> str:
        """keep, archive, delete — or protected, which forgetting never touches."""
        age = _days_between(_parse(memory.get("timestamp")), now)
        if age is None or age < self.grace_days:
            return PROTECTED
        if _unit(memory.get("importance"), 0.5) >= self.protected_importance:
            return PROTECTED
        if memory.get("type") in self.protected_types:
            return PROTECTED
        if relevance < self.delete_below:
            return DELETE
        if relevance < self.archive_below and not memory.get("archived"):
            return ARCHIVE
        return KEEP
