"""The store-side scope, re-checked in Python for memories that did not come from a scoped search.

Candidate searches filter inside FalkorDB/Qdrant. Memories reached another way — relation or
entity expansion, ``priority_ids`` fetched by id, supersession heads — pass through
``in_scope`` instead, so no path bypasses tag, time, type or exclusion filters.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pipeline.graph import Scope, TagFilter
from pipeline.records import tag_prefixes


def timestamp_epoch(memory: dict[str, Any]) -> float | None:
    value = memory.get("timestamp_epoch")
    if isinstance(value, (int, float)):
        return float(value)
    return parse_epoch(memory.get("timestamp"))


def parse_epoch(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _prefixes(memory: dict[str, Any]) -> set[str]:
    stored = memory.get("tag_prefixes")
    return set(stored) if isinstance(stored, list) else set(tag_prefixes(memory.get("tags") or []))


def matches_tags(memory: dict[str, Any], tag_filter: TagFilter) -> bool:
    if not tag_filter.active:
        return True
    have = _prefixes(memory) if tag_filter.match == "prefix" else {t.lower() for t in memory.get("tags") or []}
    wanted = tag_filter.lowered
    return all(t in have for t in wanted) if tag_filter.mode == "all" else any(t in have for t in wanted)


def in_scope(memory: dict[str, Any], scope: Scope, *, check_tags: bool = True) -> bool:
    """Whether a memory passes the scope's hard filters (tags optional: expansion may skip them)."""
    if memory.get("archived") or (memory.get("type") or "") in scope.excluded_types:
        return False
    if check_tags and not matches_tags(memory, scope.tags):
        return False
    if scope.exclude_tags and _prefixes(memory) & set(scope.excluded_lowered):
        return False
    if scope.start_epoch is not None or scope.end_epoch is not None:
        moment = timestamp_epoch(memory)
        if moment is None:
            return False
        if scope.start_epoch is not None and moment < scope.start_epoch:
            return False
        if scope.end_epoch is not None and moment > scope.end_epoch:
            return False
    return True
