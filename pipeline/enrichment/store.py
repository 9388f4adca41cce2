"""Graph writes of the enrichment stage: node properties and exact-duplicate groups."""

from __future__ import annotations

from typing import Any

from pipeline.graph import GraphStore

# Optimistic concurrency: the write lands only if the memory was not updated since it was
# read, so a PATCH racing enrichment is never overwritten with tags computed from old text.
_APPLY = (
    "UNWIND $rows AS row "
    "MATCH (m:Memory {id: row.id}) WHERE m.updated_at = row.seen "
    "SET m += row.props "
    "RETURN m.id"
)

# Recompute each duplicate group: the oldest member (then the smallest id) is the original,
# every other member points at it. Idempotent, and safe when members arrive out of order.
_REGROUP = (
    "UNWIND $hashes AS h "
    "MATCH (d:Memory {content_hash: h}) "
    "WITH h, d ORDER BY d.timestamp_epoch ASC, d.id ASC "
    "WITH h, collect(d) AS members "
    "UNWIND members AS d "
    "WITH d, CASE WHEN d = members[0] THEN null ELSE members[0].id END AS original "
    "WHERE coalesce(d.duplicate_of, '') <> coalesce(original, '') "
    "SET d.duplicate_of = original "
    "RETURN d.id, original"
)


def apply_enrichment(graph: GraphStore, rows: list[dict[str, Any]]) -> set[str]:
    """Write ``props`` for each ``{id, seen, props}`` row; returns the ids written."""
    if not rows:
        return set()
    return {row[0] for row in graph.run_write(_APPLY, {"rows": rows})}


def regroup_duplicates(graph: GraphStore, hashes: list[str]) -> list[tuple[str, str | None]]:
    """Re-derive ``duplicate_of`` in the given groups; returns (id, original) for changed members."""
    if not hashes:
        return []
    return [(row[0], row[1]) for row in graph.run_write(_REGROUP, {"hashes": sorted(set(hashes))})]
