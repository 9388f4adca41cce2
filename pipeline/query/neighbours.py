"""Neighbouring turns: a candidate next to a strong match in its scope gains a share of its score.

In a conversation the answer to a question is often spread over consecutive turns ("Did you
go?" / "Yes, last Sunday"), and only one of them looks like the question. Enrichment chains
each scope's memories by ``PRECEDED_BY`` (timestamp order, ties in order of arrival), so for
every pair of candidates adjacent in such a chain the lower one is raised by
``SEARCH_WEIGHT_NEIGHBOUR`` × the higher one's score, and for every pair two steps apart
``SEARCH_WEIGHT_NEIGHBOUR_FAR`` × it (an answer often sits two turns after the question that
names its topic, the other speaker's reply in between). Only pairs inside the candidate pool
count (the turn between a pair two apart need not be), and both distances come from one graph
read. Scores before the bonus are used, so a bonus never propagates.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.graph import GraphStore
from pipeline.query.response import Scored

# Fixed relation type and path lengths; ids are parameters. Both directions are found from the
# pool's side. The ``WITH`` before the ``IN`` filter matters: with the filter on ``b`` in the
# MATCH, FalkorDB plans an index scan of ``b.id IN $ids`` for every unwound id (pool² lookups)
# instead of following the relationships out of ``a``.
_CHAINED = (
    "UNWIND $ids AS id "
    "MATCH p = (a:Memory {id: id})-[:PRECEDED_BY*1..%d]->(b:Memory) "
    "WITH a, b, length(p) AS steps WHERE b.id IN $ids "
    "RETURN DISTINCT a.id, b.id, steps"
)
_ONE_STEP = _CHAINED % 1
_UP_TO_TWO_STEPS = _CHAINED % 2

@dataclass(frozen=True)
class ChainedPairs:
    """(later, earlier) pairs of pool members, one step apart in some scope and two steps apart."""

    adjacent: list[tuple[str, str]] = field(default_factory=list)
    two_apart: list[tuple[str, str]] = field(default_factory=list)


def chained_pairs(graph: GraphStore, memory_ids: list[str], steps: int = 1) -> ChainedPairs:
    """Pairs of ``memory_ids`` that follow each other within ``steps`` (1 or 2) PRECEDED_BY edges:
    one read for both distances."""
    if len(memory_ids) < 2:
        return ChainedPairs()
    query = _UP_TO_TWO_STEPS if steps >= 2 else _ONE_STEP
    pairs = ChainedPairs()
    for later, earlier, apart in graph.read(query, {"ids": memory_ids}):
        (pairs.adjacent if apart == 1 else pairs.two_apart).append((later, earlier))
    return pairs


def _best_partner(base: dict[str, float], pairs: list[tuple[str, str]]) -> dict[str, float]:
    best: dict[str, float] = {}
    for later, earlier in pairs:
        if later in base and earlier in base:
            best[later] = max(best.get(later, 0.0), base[earlier])
            best[earlier] = max(best.get(earlier, 0.0), base[later])
    return best


def apply_neighbour_bonus(rows: list[Scored], pairs: list[tuple[str, str]], weight: float,
                          far_pairs: list[tuple[str, str]] = (), far_weight: float = 0.0) -> None:
    """Add ``weight`` × the best adjacent candidate's score and ``far_weight`` × the best one two
    steps away to each row (component ``neighbour``)."""
    if (weight <= 0 or not pairs) and (far_weight <= 0 or not far_pairs):
        return
    base = {row.id: row.score for row in rows}
    near = _best_partner(base, pairs) if weight > 0 else {}
    far = _best_partner(base, list(far_pairs)) if far_weight > 0 else {}
    for row in rows:
        bonus = weight * max(0.0, near.get(row.id, 0.0)) + far_weight * max(0.0, far.get(row.id, 0.0))
        if bonus:
            row.components["neighbour"] = bonus
            row.score += bonus
