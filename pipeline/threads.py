"""Thread structure in the graph: a reply is ``PART_OF`` its thread's root.

A record names its root with ``metadata.part_of`` (a memory id; the Slack importer and the
events endpoint set it for thread replies). Either side may be persisted first, or by
different workers at once, so the link is made from both ends: a reply links to its root if
the root is there, and a newly persisted memory adopts replies that named it and arrived
earlier (``part_of`` is kept on the reply node for that). ``MERGE`` makes both idempotent.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from pipeline.records import MemoryRecord, iso, now_utc

PART_OF = "PART_OF"

Query = Callable[[str, dict[str, Any]], Any]

_LINK_TO_ROOTS = (
    "UNWIND $rows AS row "
    "MATCH (c:Memory {id: row.child}) SET c.part_of = row.root "
    "WITH c, row MATCH (r:Memory {id: row.root}) WHERE r <> c "
    f"MERGE (c)-[e:{PART_OF}]->(r) ON CREATE SET e.strength = 1.0, e.created_at = $now"
)
_ADOPT_EARLIER_REPLIES = (
    "UNWIND $ids AS id "
    "MATCH (c:Memory {part_of: id}) MATCH (r:Memory {id: id}) WHERE r <> c "
    f"MERGE (c)-[e:{PART_OF}]->(r) ON CREATE SET e.strength = 1.0, e.created_at = $now"
)
SCHEMA = ("CREATE INDEX FOR (m:Memory) ON (m.part_of)",)


def root_of(record: MemoryRecord) -> str | None:
    root = (record.metadata or {}).get("part_of")
    return root if isinstance(root, str) and root and root != record.id else None


def link_threads(query: Query, records: Iterable[MemoryRecord]) -> None:
    """Make the ``PART_OF`` edges of a persisted batch (parameterised; two round trips at most)."""
    records = list(records)
    now = iso(now_utc())
    rows = [{"child": r.id, "root": root} for r in records if (root := root_of(r))]
    if rows:
        query(_LINK_TO_ROOTS, {"rows": rows, "now": now})
    query(_ADOPT_EARLIER_REPLIES, {"ids": [r.id for r in records], "now": now})
