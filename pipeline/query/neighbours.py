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
from typing import Any

from pipeline.enrichment.scopes import scope_tags
from pipeline.graph import GraphStore
from pipeline.labelled import split_label
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
# The same read, plus each pool member's arrival (its batch position): one round trip for both.
# (Asking only for the members without a PRECEDED_BY edge, WHERE NOT (m)-[:PRECEDED_BY]-(),
# cost 2.4 ms for a pool of 50 against 0.2 ms for every member's arrival.)
_CHAINED_AND_ARRIVALS = (
    "UNWIND $ids AS id "
    "MATCH p = (a:Memory {id: id})-[:PRECEDED_BY*1..%d]->(b:Memory) "
    "WITH a, b, length(p) AS steps WHERE b.id IN $ids "
    "RETURN DISTINCT a.id AS x, b.id AS y, steps AS z "
    "UNION ALL "
    "UNWIND $ids AS id MATCH (m:Memory {id: id}) RETURN m.id AS x, m.arrival AS y, -1 AS z"
)


@dataclass(frozen=True)
class ChainedPairs:
    """(later, earlier) pairs of pool members, one step apart in some scope and two steps apart."""

    adjacent: list[tuple[str, str]] = field(default_factory=list)
    two_apart: list[tuple[str, str]] = field(default_factory=list)


def chained_pairs(graph: GraphStore, memory_ids: list[str], steps: int = 1, scope_prefixes: tuple[str, ...] = (),
                  members: dict[str, tuple[float | None, list[str]]] | None = None) -> ChainedPairs:
    """Pairs of ``memory_ids`` that follow each other within ``steps`` (1 or 2) PRECEDED_BY edges:
    one read for both distances.

    With ``scope_prefixes`` and ``members`` (id → timestamp epoch, tags), the same read also
    returns each member's arrival, and members a batch wrote next to each other in a scope pair
    up as their chain will (``batch_pairs``): right after an import, before enrichment has
    chained the turns, recall need not do without the bonus.
    """
    if len(memory_ids) < 2:
        return ChainedPairs()
    pairs = ChainedPairs()
    with_arrivals = bool(scope_prefixes and members)
    query = (_CHAINED_AND_ARRIVALS % (2 if steps >= 2 else 1)) if with_arrivals else (
        _UP_TO_TWO_STEPS if steps >= 2 else _ONE_STEP)
    arrivals = []
    for first, second, apart in graph.read(query, {"ids": memory_ids}):
        if apart == -1:
            at, tags = members.get(first, (None, []))
            arrivals.append((first, second, at, tags))
        else:
            (pairs.adjacent if apart == 1 else pairs.two_apart).append((first, second))
    if arrivals:
        known = set(pairs.adjacent) | set(pairs.two_apart)
        near, far = batch_pairs(arrivals, scope_prefixes, steps)
        pairs.adjacent.extend(p for p in near if p not in known)
        pairs.two_apart.extend(p for p in far if p not in known)
    return pairs


def batch_pairs(rows: list[tuple[str, Any, Any, list[str]]], scope_prefixes: tuple[str, ...],
                steps: int = 2) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(later, earlier) pairs, one and two apart, of memories one batch wrote next to each other.

    ``rows``: (id, arrival, timestamp epoch, tags). A batch's items are accepted with one clock
    reading plus their index (``records.arrival_of``), and enrichment chains a scope in
    timestamp order, equal timestamps in arrival order. So two memories that share a scope tag,
    whose arrivals differ by 1 (or 2) and whose timestamps do not go backwards, are the pair (or
    the pair two apart) enrichment chains. Single writes get arrivals a clock tick apart at
    best: no pair. (A memory later written into the middle of a batch's timeline breaks the
    chain there, not these pairs: rare, and a neighbour bonus at worst.)
    """
    by_scope: dict[str, dict[int, tuple[str, float]]] = {}
    for memory_id, arrival, at, tags in rows:
        if not isinstance(arrival, int):
            continue
        for scope in scope_tags(tags, scope_prefixes):
            by_scope.setdefault(scope, {})[arrival] = (memory_id, float(at or 0.0))
    near: set[tuple[str, str]] = set()
    far: set[tuple[str, str]] = set()
    for members in by_scope.values():
        for arrival, (later, at) in members.items():
            for gap, found in ((1, near), (2, far)):
                if gap > steps:
                    continue
                earlier = members.get(arrival - gap)
                if earlier is not None and earlier[1] <= at:
                    found.add((later, earlier[0]))
    return sorted(near), sorted(far)


def same_speaker(rows: list[Scored], pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The ``pairs`` whose two turns have the same speaker label (``RECALL_NEIGHBOUR_FAR_SAME_SPEAKER``).

    A pair where either side has no label (not a conversation turn, or a label the content does
    not carry) is kept: nothing says it crosses speakers. LoCoMo's turns alternate, so every
    two-apart pair there is one speaker's and this changes nothing; in a real chat one speaker
    sends several messages in a row, and a pair two apart is as often the other speaker's
    message on another topic (issue 23: the two-apart share cost REALTALK recall@10 0.012).
    """
    labels = {row.id: split_label(row.candidate.memory.get("content") or "")[0] for row in rows}
    kept = []
    for later, earlier in pairs:
        first, second = labels.get(later), labels.get(earlier)
        if first is None or second is None or first.casefold() == second.casefold():
            kept.append((later, earlier))
    return kept


def _best_partner(base: dict[str, float], pairs: list[tuple[str, str]], silent: frozenset[str]) -> dict[str, float]:
    best: dict[str, float] = {}
    for later, earlier in pairs:
        if later in base and earlier in base:
            if earlier not in silent:
                best[later] = max(best.get(later, 0.0), base[earlier])
            if later not in silent:
                best[earlier] = max(best.get(earlier, 0.0), base[later])
    return best


def apply_neighbour_bonus(rows: list[Scored], pairs: list[tuple[str, str]], weight: float,
                          far_pairs: list[tuple[str, str]] = (), far_weight: float = 0.0,
                          silent: frozenset[str] = frozenset(), far_silent: frozenset[str] = frozenset()) -> None:
    """Add ``weight`` × the best adjacent candidate's score and ``far_weight`` × the best one two
    steps away to each row (component ``neighbour``); members in ``silent`` and ``far_silent`` pass
    no adjacent and no two-apart share (they still receive theirs)."""
    if (weight <= 0 or not pairs) and (far_weight <= 0 or not far_pairs):
        return
    base = {row.id: row.score for row in rows}
    near = _best_partner(base, pairs, silent) if weight > 0 else {}
    far = _best_partner(base, list(far_pairs), far_silent) if far_weight > 0 else {}
    for row in rows:
        bonus = weight * max(0.0, near.get(row.id, 0.0)) + far_weight * max(0.0, far.get(row.id, 0.0))
        if bonus:
            row.components["neighbour"] = bonus
            row.score += bonus
