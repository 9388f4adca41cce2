"""The graph reads recall needs beyond candidate search: edges around a set of memories.

Relationship types come from ``pipeline.relations`` (a fixed registry); every value is a
parameter. Each function is one round trip for any number of memories.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.graph import GraphStore, memory_from_row, memory_projection
from pipeline.relations import DEFAULT_EXPAND_TYPES, SUPERSEDING_TYPES, pattern


@dataclass(frozen=True)
class Edge:
    """One relation seen from ``seed``: the other end is ``memory``."""

    seed: str
    type: str
    strength: float | None
    outgoing: bool
    updated_at: str | None
    memory: dict[str, Any]

    def stub(self) -> dict[str, Any]:
        return {
            "id": self.memory["id"],
            "type": self.type,
            "strength": self.strength,
            "direction": "outgoing" if self.outgoing else "incoming",
            "from": self.seed,
        }


def neighbours(
    graph: GraphStore,
    seed_ids: list[str],
    *,
    types: tuple[str, ...] = DEFAULT_EXPAND_TYPES,
    min_strength: float = 0.0,
    per_seed: int = 5,
    with_memories: bool = True,
) -> dict[str, list[Edge]]:
    """Up to ``per_seed`` edges of each seed, newest first (edge update time, else the memory's time).

    Ranking a seed's edges reads every one of them, but only ids and edge fields travel that
    far: the other ends' memories (``with_memories``) are read afterwards for the edges kept,
    so a seed with thousands of edges costs a sort of small rows, not a projection of
    thousands of memories. Without ``with_memories`` only the other end's id comes back
    (enough to hydrate ``relations``).
    """
    if not seed_ids or per_seed <= 0:
        return {}
    # Untyped match + a type list parameter: faster than an 11-way type alternation.
    cypher = (
        "UNWIND $ids AS id "
        "MATCH (s:Memory {id: id})-[r]-(o:Memory) "
        "WHERE type(r) IN $types AND coalesce(r.strength, 0.0) >= $min_strength AND o.id <> id "
        "WITH id, r, o, startNode(r) = s AS outgoing "
        "ORDER BY coalesce(r.updated_at, o.timestamp) DESC "
        "WITH id, collect([type(r), r.strength, outgoing, r.updated_at, o.id]) AS edges "
        "RETURN id, edges[0..$per_seed]"
    )
    rows = graph.read(cypher, {"ids": seed_ids, "types": list(types), "min_strength": float(min_strength),
                               "per_seed": int(per_seed)})
    memories: dict[str, dict[str, Any]] = {}
    if with_memories:
        memories = graph.recall_memories(sorted({other for _, edges in rows for *_, other in edges}))
    found: dict[str, list[Edge]] = {}
    for seed, edges in rows:
        found[seed] = [
            Edge(seed, kind, None if strength is None else float(strength), bool(out), updated,
                 memories[other] if with_memories else {"id": other})
            for kind, strength, out, updated, other in edges
            if not with_memories or other in memories
        ]
    return found


def replacements(graph: GraphStore, memory_ids: list[str]) -> dict[str, tuple[str, dict[str, Any]]]:
    """For each memory that has one, its newest outgoing INVALIDATED_BY/EVOLVED_INTO edge and target."""
    if not memory_ids:
        return {}
    # Every recall runs this over its whole candidate pool (80 ids in a tag scope). One index
    # scan over the id list is cheaper than a lookup per UNWIND row.
    cypher = (
        f"MATCH (a:Memory)-[r{pattern(SUPERSEDING_TYPES)}]->(b:Memory) WHERE a.id IN $ids "
        "WITH a.id AS id, r, b ORDER BY coalesce(r.updated_at, b.timestamp) DESC "
        f"WITH id, collect([type(r), {memory_projection('b')}])[0] AS newest "
        "RETURN id, newest[0], newest[1]"
    )
    return {row[0]: (row[1], memory_from_row(row[2])) for row in graph.read(cypher, {"ids": memory_ids})}


def relevance_scores(graph: GraphStore, memory_ids: list[str]) -> dict[str, float | None]:
    """The decay cycle's relevance of each memory found (None where it has not scored one yet)."""
    if not memory_ids:
        return {}
    rows = graph.read("MATCH (m:Memory) WHERE m.id IN $ids RETURN m.id, m.relevance_score", {"ids": memory_ids})
    return {memory_id: None if score is None else float(score) for memory_id, score in rows}


def contradictions(graph: GraphStore, memory_ids: list[str]) -> list[tuple[str, str, bool, float | None]]:
    """CONTRADICTS edges touching ``memory_ids``: (memory, other memory, outgoing, strength)."""
    if not memory_ids:
        return []
    cypher = (
        "UNWIND $ids AS id "
        "MATCH (a:Memory {id: id})-[r:CONTRADICTS]-(b:Memory) WHERE b.id <> id "
        "RETURN id, b.id, startNode(r) = a, r.strength"
    )
    return [(row[0], row[1], bool(row[2]), None if row[3] is None else float(row[3]))
            for row in graph.read(cypher, {"ids": memory_ids})]

