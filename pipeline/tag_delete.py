"""Deleting every memory in a tag scope: the one store write made while a request waits.

Every other write the API accepts goes through the broker, so a store outage never makes it
fail. ``DELETE /memory/by-tag`` cannot: AutoMem's answer is ``deleted_count``, how many
memories the delete removed, which only the graph knows once they are gone. So the route runs
this while its request waits, and a graph outage answers 503 (batches deleted before it stay
deleted, their vectors dropped).

Each batch is tombstoned first (a write still in flight for one of them is then dropped, not
resurrected), and the vectors of what the batch removed are dropped through the vectors queue,
the Qdrant Edge shard's owner, as every delete's are.
"""

from __future__ import annotations

from collections.abc import Callable

from pipeline.graph import GraphStore, TagFilter, tag_predicate

DELETE_BATCH = 500


def ids_by_tag(graph: GraphStore, tag_filter: TagFilter, limit: int) -> list[str]:
    """Up to ``limit`` ids of memories in the tag scope (any of them: a delete takes them away)."""
    rows = graph.run_read(f"MATCH (m:Memory) WHERE {tag_predicate(tag_filter)} RETURN m.id LIMIT $limit",
                          {"scope_tags": tag_filter.lowered, "limit": limit})
    return [row[0] for row in rows]


def delete_by_tag(graph: GraphStore, tag_filter: TagFilter, before_delete: Callable[[list[str]], None],
                  after_delete: Callable[[list[str]], None], batch: int = DELETE_BATCH) -> int:
    """Delete every memory in the tag scope, ``batch`` at a time; how many were deleted.

    ``before_delete(ids)`` runs before each batch (the caller tombstones them), ``after_delete(ids)``
    with the ids the batch removed (the caller drops their vectors): a failure part-way leaves
    no deleted node with a vector nobody drops. Counts what ``DETACH DELETE`` removed, so a
    memory deleted meanwhile by someone else is not counted.
    """
    count = 0
    while ids := ids_by_tag(graph, tag_filter, batch):
        before_delete(ids)
        rows = graph.run_write(
            "UNWIND $ids AS id MATCH (m:Memory {id: id}) WITH m, m.id AS gone DETACH DELETE m RETURN gone",
            {"ids": ids},
        )
        gone = [row[0] for row in rows]
        if gone:
            after_delete(gone)
        count += len(gone)
    return count
