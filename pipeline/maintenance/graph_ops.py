"""The Cypher maintenance needs: paging, relevance, archiving, sampling, tag scans.

Parameterised throughout: values only ever reach FalkorDB as parameters. Pages walk the
graph in ``id`` order from a cursor (the last id seen), so a cycle over any number of
memories holds one page at a time and resumes from its cursor after a redelivery.
"""

from __future__ import annotations

from typing import Any, Iterable

from pipeline.graph import GraphStore, TagFilter, memory_from_node, tag_predicate


def page_memories(graph: GraphStore, after: str | None, limit: int) -> list[dict[str, Any]]:
    """The next ``limit`` memories after ``after`` in id order (memory objects)."""
    rows = graph.run_read(
        "MATCH (m:Memory) WHERE m.id > $after RETURN m ORDER BY m.id LIMIT $limit",
        {"after": after or "", "limit": limit},
    )
    return [memory_from_node(row[0].properties) for row in rows]


def relation_counts(graph: GraphStore, memory_ids: list[str]) -> dict[str, int]:
    """Edges touching each memory (either direction, any type)."""
    if not memory_ids:
        return {}
    rows = graph.run_read(
        "UNWIND $ids AS id MATCH (m:Memory {id: id}) OPTIONAL MATCH (m)-[r]-() RETURN id, count(r)",
        {"ids": memory_ids},
    )
    return {row[0]: int(row[1]) for row in rows}


def set_relevance(graph: GraphStore, scores: dict[str, float], at: str) -> None:
    if scores:
        graph.run_write(
            "UNWIND $rows AS row MATCH (m:Memory {id: row.id}) SET m.relevance_score = row.score, m.relevance_at = $at",
            {"rows": [{"id": k, "score": v} for k, v in scores.items()], "at": at},
        )


def archive(graph: GraphStore, memory_ids: list[str], at: str) -> None:
    if memory_ids:
        graph.run_write(
            "UNWIND $ids AS id MATCH (m:Memory {id: id}) SET m.archived = true, m.archived_at = $at",
            {"ids": memory_ids, "at": at},
        )


def sample_ids(graph: GraphStore, count: int, excluded_types: Iterable[str]) -> list[str]:
    """A uniform random sample of live (not archived, not excluded-type) memory ids."""
    rows = graph.run_read(
        "MATCH (m:Memory) WHERE NOT coalesce(m.archived, false) AND NOT coalesce(m.type, '') IN $excluded "
        "WITH m.id AS id, rand() AS r ORDER BY r LIMIT $n RETURN id",
        {"excluded": list(excluded_types), "n": count},
    )
    return [row[0] for row in rows]


def connected_pairs(graph: GraphStore, pairs: list[tuple[str, str]], ignore_run: str = "") -> set[frozenset[str]]:
    """Which of these pairs already share an edge (either direction, any type).

    Edges made by ``ignore_run`` do not count, so a redelivered step reports what it linked.
    """
    if not pairs:
        return set()
    rows = graph.run_read(
        "UNWIND $pairs AS p MATCH (a:Memory {id: p[0]})-[r]-(b:Memory {id: p[1]}) "
        "WHERE $run = '' OR coalesce(r.run_id, '') <> $run RETURN DISTINCT a.id, b.id",
        {"pairs": [list(p) for p in pairs], "run": ignore_run},
    )
    return {frozenset((row[0], row[1])) for row in rows}


def stale_meta_patterns(graph: GraphStore, keep_run: str, after: str | None, limit: int) -> list[str]:
    """MetaPattern ids not written by ``keep_run`` (the summaries a new cluster run replaces)."""
    rows = graph.run_read(
        "MATCH (m:Memory) WHERE m.type = 'MetaPattern' AND coalesce(m.cluster_run, '') <> $run AND m.id > $after "
        "RETURN m.id ORDER BY m.id LIMIT $limit",
        {"run": keep_run, "after": after or "", "limit": limit},
    )
    return [row[0] for row in rows]


def _tag_scope(tag_filter: TagFilter) -> tuple[str, dict[str, Any]]:
    return tag_predicate(tag_filter), {"scope_tags": tag_filter.lowered}


def ids_by_tag(graph: GraphStore, tag_filter: TagFilter, after: str | None, limit: int) -> list[str]:
    predicate, params = _tag_scope(tag_filter)
    rows = graph.run_read(
        f"MATCH (m:Memory) WHERE {predicate} AND m.id > $after RETURN m.id ORDER BY m.id LIMIT $limit",
        {**params, "after": after or "", "limit": limit},
    )
    return [row[0] for row in rows]
