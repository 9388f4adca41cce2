"""Relationships consolidation writes. Relationship types are fixed names here, never input.

``DISCOVERED`` is one of the system relation types (with ``SIMILAR_TO`` and ``PRECEDED_BY``);
members of a cluster point at their MetaPattern with ``EXEMPLIFIES`` (the member exemplifies
the pattern), AutoMem's type for that relation. Kept as two small functions so they fold
into the relation registry (``pipeline/relations.py``) when it lands.
"""

from __future__ import annotations

from pipeline.graph import GraphStore

DISCOVERED = "DISCOVERED"
EXEMPLIFIES = "EXEMPLIFIES"


def link_discovered(graph: GraphStore, links: list[dict], at: str, run_id: str) -> int:
    """MERGE ``(a)-[:DISCOVERED]->(b)`` for each ``{"a", "b", "strength"}``; returns links present."""
    if not links:
        return 0
    rows = graph.run_write(
        "UNWIND $rows AS row MATCH (a:Memory {id: row.a}) MATCH (b:Memory {id: row.b}) "
        "MERGE (a)-[r:DISCOVERED]->(b) SET r.strength = row.strength, r.discovered_at = $at, r.run_id = $run "
        "RETURN count(r)",
        {"rows": links, "at": at, "run": run_id},
    )
    return int(rows[0][0]) if rows else 0


def link_pattern_members(graph: GraphStore, pattern_id: str, members: list[dict], at: str) -> int:
    """MERGE ``(member)-[:EXEMPLIFIES]->(pattern)`` for each ``{"id", "strength"}``."""
    if not members:
        return 0
    rows = graph.run_write(
        "MATCH (p:Memory {id: $pattern}) UNWIND $rows AS row MATCH (m:Memory {id: row.id}) "
        "MERGE (m)-[r:EXEMPLIFIES]->(p) SET r.strength = row.strength, r.created_at = $at RETURN count(r)",
        {"pattern": pattern_id, "rows": members, "at": at},
    )
    return int(rows[0][0]) if rows else 0
