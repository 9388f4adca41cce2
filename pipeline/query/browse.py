"""The read endpoints beside ranked recall: tag enumeration, startup recall, analytics.

Each is a handful of parameterised reads over the graph (the record); none scores.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Iterable

from pipeline.graph import GraphStore, Scope, TagFilter, memory_from_node
from pipeline.query.state import validity_reason

LESSON_TAGS = ("critical", "lesson", "lessons", "ai-lesson")
RULE_TAGS = ("system", "rule", "rules", "system-rule", "memory-recall")


def by_tag(graph: GraphStore, tags: list[str], limit: int, offset: int, excluded_types: Iterable[str]) -> dict[str, Any]:
    """Exact, case-insensitive, any-of enumeration, newest first; one row past the page says has_more."""
    rows = graph.read(
        "MATCH (m:Memory) WHERE NOT coalesce(m.type, '') IN $excluded "
        "AND any(t IN m.tags WHERE toLower(t) IN $tags) "
        "RETURN m ORDER BY m.timestamp_epoch DESC, m.id SKIP $offset LIMIT $take",
        {"tags": [t.lower() for t in tags], "excluded": sorted(excluded_types), "offset": offset, "take": limit + 1},
    )
    memories = [memory_from_node(row[0].properties) for row in rows]
    has_more = len(memories) > limit
    page = memories[:limit]
    body: dict[str, Any] = {
        "status": "success", "tags": tags, "count": len(page), "limit": limit, "offset": offset,
        "has_more": has_more, "memories": page,
    }
    if has_more:
        body["next_offset"] = offset + len(page)
    return body


def _current(memories: list[dict[str, Any]]) -> list[dict[str, Any]]:
    now = datetime.now(timezone.utc).timestamp()
    return [m for m in memories if validity_reason(m, now) is None]


def startup_recall(graph: GraphStore, excluded_types: frozenset[str], limit: int) -> dict[str, Any]:
    """Critical lessons and system rules an agent should load at session start, most important first."""
    def tagged(tags: tuple[str, ...]) -> list[dict[str, Any]]:
        return _current(graph.trending(Scope(TagFilter(tags), excluded_types=excluded_types), limit * 2))[:limit]

    lessons, rules = tagged(LESSON_TAGS), tagged(RULE_TAGS)
    rule_ids = {m["id"] for m in rules}
    lessons = [m for m in lessons if m["id"] not in rule_ids]
    return {
        "status": "success",
        "critical_lessons": lessons,
        "system_rules": rules,
        "lesson_count": len(lessons),
        "rule_count": len(rules),
        "has_critical": bool(lessons),
    }


_CONFIDENCE_BUCKETS = (("high", 0.8), ("medium", 0.5), ("low", 0.0))


def analyze(graph: GraphStore, excluded_types: frozenset[str]) -> dict[str, Any]:
    params = {"excluded": sorted(excluded_types)}
    where = "WHERE NOT coalesce(m.type, '') IN $excluded"
    types = {row[0] or "untyped": int(row[1]) for row in graph.read(f"MATCH (m:Memory) {where} RETURN m.type, count(m)", params)}
    months = graph.read(
        f"MATCH (m:Memory) {where} WITH substring(coalesce(m.timestamp, ''), 0, 7) AS month WHERE month <> '' "
        "RETURN month, count(*) ORDER BY month DESC LIMIT 12", params)
    hours = graph.read(
        f"MATCH (m:Memory) {where} WITH substring(coalesce(m.timestamp, ''), 11, 2) AS hour WHERE hour <> '' "
        "RETURN hour, count(*) ORDER BY count(*) DESC LIMIT 3", params)
    entities = graph.read(
        f"MATCH (m:Memory) {where} UNWIND coalesce(m.tags, []) AS tag WITH toLower(tag) AS tag "
        "WHERE tag STARTS WITH 'entity:' RETURN tag, count(*) AS n ORDER BY n DESC LIMIT 20", params)
    confidence = graph.read(
        f"MATCH (m:Memory) {where} RETURN "
        "sum(CASE WHEN m.confidence >= 0.8 THEN 1 ELSE 0 END), "
        "sum(CASE WHEN m.confidence >= 0.5 AND m.confidence < 0.8 THEN 1 ELSE 0 END), "
        "sum(CASE WHEN m.confidence < 0.5 THEN 1 ELSE 0 END), avg(m.confidence)", params)[0]
    preferences = graph.read(
        "MATCH (m:Memory) WHERE m.type = 'Preference' AND NOT coalesce(m.archived, false) "
        "RETURN m.id, m.content, m.importance ORDER BY m.importance DESC, m.timestamp_epoch DESC LIMIT 10")
    return {
        "status": "success",
        "analytics": {
            "total_memories": sum(types.values()),
            "memory_types": types,
            "preferences": [{"id": r[0], "content": r[1], "importance": r[2]} for r in preferences],
            "temporal_insights": {
                "by_month": {r[0]: int(r[1]) for r in months},
                "most_active_hours_utc": [{"hour": r[0], "count": int(r[1])} for r in hours],
            },
            "entities": [{"tag": r[0], "count": int(r[1])} for r in entities],
            "confidence_distribution": {
                "high": int(confidence[0] or 0), "medium": int(confidence[1] or 0), "low": int(confidence[2] or 0),
                "average": round(float(confidence[3]), 4) if confidence[3] is not None else None,
            },
        },
    }
