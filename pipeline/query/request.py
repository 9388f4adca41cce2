"""What a recall asks for, already parsed and validated by the API layer."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime

from pipeline.graph import TagFilter

SORTS = ("score", "time_desc", "time_asc", "updated_desc", "updated_asc")
STATE_MODES = ("current", "history")
RECENCY_BIAS_MODES = ("off", "on", "auto")


@dataclass(frozen=True)
class ExpansionOptions:
    relations: bool = False
    entities: bool = False
    relation_limit: int = 5
    expansion_limit: int = 25
    min_importance: float = 0.0
    min_strength: float = 0.0
    respect_tags: bool = False


@dataclass(frozen=True)
class ContextHints:
    context: str | None = None
    language: str | None = None
    active_path: str | None = None
    tags: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    priority_ids: tuple[str, ...] = ()

    @property
    def given(self) -> bool:
        return bool(self.context or self.language or self.active_path or self.tags or self.types or self.priority_ids)


@dataclass(frozen=True)
class RecallRequest:
    query: str | None = None
    queries: tuple[str, ...] = ()
    embedding: list[float] | None = None
    limit: int = 5
    per_query_limit: int | None = None
    auto_decompose: bool = False
    tag_filter: TagFilter = field(default_factory=TagFilter)
    exclude_tags: tuple[str, ...] = ()
    time_query: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    sort: str | None = None  # None: score, or time_desc for a time window without a query
    state_mode: str = "current"
    state_debug: bool = False
    recency_bias: str = "off"
    scope_fallback: bool = False
    min_score: float = 0.0
    adaptive_floor: bool = True
    expansion: ExpansionOptions = field(default_factory=ExpansionOptions)
    context: ContextHints = field(default_factory=ContextHints)

    @property
    def has_text(self) -> bool:
        return bool(self.query and self.query.strip() and self.query.strip() != "*")

    def for_query(self, text: str | None, limit: int) -> "RecallRequest":
        """The same request narrowed to one query (multi-query recall runs one per query)."""
        return replace(self, query=text, queries=(), auto_decompose=False, limit=limit)
