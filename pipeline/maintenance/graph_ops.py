"""The Cypher maintenance needs: paging, relevance, archiving, sampling.

Parameterised throughout: values only ever reach FalkorDB as parameters.

**Paging** walks the graph in FalkorDB's internal node-id order (keyset paging). A cursor is
``[after, end]``: the last internal id handled and the highest one when the walk began. A page
asks for ``id(m) > $after AND id(m) <= $upper`` with ``$upper`` a bounded window above the
cursor; FalkorDB serves both bounds inside its label-and-id scan (GRAPH.EXPLAIN shows one
``Node By Label and ID Scan`` and no ``Filter``), so the sort that follows holds at most one
window, and a page costs the same at any store size. The obvious ``WHERE m.id > $after ORDER
BY m.id LIMIT n`` lets the range index filter, then projects and sorts everything after the
cursor: a whole walk is O(n²/page).

Memories written after a walk began may fall outside it (they get a higher id, or reuse a
deleted one below the cursor); the next run covers them. A redelivered step carries the same
cursor and redoes the same page.
"""

from __future__ import annotations

from typing import Any, Iterable

from redis.exceptions import ResponseError

from pipeline.graph import MISSING_GRAPH_ERROR, GraphStore, memory_from_node


# A window this many times the page: ids of deleted nodes and of other labels leave gaps,
# and a step reads windows until its page is full, at most MAX_WINDOWS of them.
WINDOW_FACTOR = 2
MAX_WINDOWS = 64

PAGE_QUERY = (
    "MATCH (m:Memory) WHERE id(m) > $after AND id(m) <= $upper "
    "RETURN id(m), m ORDER BY id(m) LIMIT $limit"
)
IDS_QUERY = (
    "MATCH (m:Memory) WHERE id(m) > $after AND id(m) <= $upper "
    "RETURN id(m), m.id ORDER BY id(m) LIMIT $limit"
)


def highest_node_id(graph: GraphStore) -> int:
    """-1 for an empty graph, and for one that does not exist at all (nothing to walk either way)."""
    try:
        rows = graph.run_read("MATCH (m:Memory) RETURN max(id(m))")
    except ResponseError as exc:
        if MISSING_GRAPH_ERROR in str(exc):
            return -1
        raise
    return int(rows[0][0]) if rows and rows[0][0] is not None else -1


def walk(graph: GraphStore, cypher: str, cursor: list[int] | None, limit: int) -> tuple[list[Any], list[int] | None]:
    """Keyset paging: up to ``limit`` values of the second column after ``cursor``, and the next cursor.

    ``cypher`` must filter on ``id(m) > $after AND id(m) <= $upper``, return ``id(m)`` first and
    order by it, with ``LIMIT $limit`` (as ``PAGE_QUERY``). The next cursor is None when done.
    """
    after, end = cursor if cursor else (-1, highest_node_id(graph))
    window = max(limit * WINDOW_FACTOR, 1)
    found: list[Any] = []
    for _ in range(MAX_WINDOWS):
        if len(found) >= limit or after >= end:
            break
        upper = min(after + window, end)
        wanted = limit - len(found)
        rows = graph.run_read(cypher, {"after": after, "upper": upper, "limit": wanted})
        found += [row[1] for row in rows]
        after = int(rows[-1][0]) if len(rows) == wanted else upper
    return found, ([after, end] if after < end else None)


def page_memories(graph: GraphStore, cursor: list[int] | None, limit: int) -> tuple[list[dict[str, Any]], list[int] | None]:
    """The next ``limit`` memories after ``cursor`` (memory objects), and the next cursor."""
    nodes, following = walk(graph, PAGE_QUERY, cursor, limit)
    return [memory_from_node(node.properties) for node in nodes], following


def page_ids(graph: GraphStore, cursor: list[int] | None, limit: int) -> tuple[list[str], list[int] | None]:
    """Like ``page_memories``, memory ids only."""
    return walk(graph, IDS_QUERY, cursor, limit)


def page_fields(graph: GraphStore, cursor: list[int] | None, limit: int,
                fields: tuple[str, ...]) -> tuple[list[dict[str, Any]], list[int] | None]:
    """Like ``page_memories``, only the named properties of each (a missing one left out).

    A step that needs a few properties reads them alone: whole nodes (content, metadata) cost
    the graph server and the step several times more, beside recalls.
    """
    if not all(field.isidentifier() for field in fields):  # names go into the query's text
        raise ValueError(f"not property names: {fields}")
    projection = "[" + ", ".join(f"m.{field}" for field in fields) + "]"
    query = ("MATCH (m:Memory) WHERE id(m) > $after AND id(m) <= $upper "
             f"RETURN id(m), {projection} ORDER BY id(m) LIMIT $limit")
    rows, following = walk(graph, query, cursor, limit)
    return [{f: v for f, v in zip(fields, row) if v is not None} for row in rows], following


def relation_counts(graph: GraphStore, memory_ids: list[str]) -> dict[str, int]:
    """Edges touching each memory (either direction, any type)."""
    if not memory_ids:
        return {}
    rows = graph.run_read(
        "UNWIND $ids AS id MATCH (m:Memory {id: id}) OPTIONAL MATCH (m)-[r]-() RETURN id, count(r)",
        {"ids": memory_ids},
    )
    return {row[0]: int(row[1]) for row in rows}


def set_relevance(graph: GraphStore, scores: dict[str, float], at: str, rows_per_query: int = 0) -> None:
    """Write the scores, ``rows_per_query`` memories a query (0: all in one): a write holds the
    graph, and a recall's reads wait behind it (``GRAPH_WRITE_ROWS``)."""
    rows = [{"id": k, "score": v} for k, v in scores.items()]
    step = rows_per_query or len(rows)
    for start in range(0, len(rows), step):
        graph.run_write(
            "UNWIND $rows AS row MATCH (m:Memory {id: row.id}) SET m.relevance_score = row.score, m.relevance_at = $at",
            {"rows": rows[start:start + step], "at": at},
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
