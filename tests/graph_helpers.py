"""Test-only helpers that write straight to a stack's FalkorDB (relations are issue 4's to create)."""

from __future__ import annotations

from falkordb import FalkorDB

from pipeline.relations import BY_NAME


def stack_graph(stack):
    return FalkorDB(host="127.0.0.1", port=stack.graph_port).select_graph(f"memories_{stack.name}")


def link(stack, source: str, target: str, kind: str = "RELATES_TO", strength: float = 0.8,
         updated_at: str | None = None) -> None:
    """One typed edge source→target; the type comes from the registry, the rest are parameters."""
    assert kind in BY_NAME, kind
    stack_graph(stack).query(
        f"MATCH (a:Memory {{id: $a}}), (b:Memory {{id: $b}}) CREATE (a)-[:{kind} {{strength: $s, updated_at: $u}}]->(b)",
        {"a": source, "b": target, "s": strength, "u": updated_at},
    )
