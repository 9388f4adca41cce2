"""The neighbour bonus: adjacent candidates share a fraction of each other's score, once."""

from __future__ import annotations

from pipeline.query.candidates import Candidate
from pipeline.query.neighbours import apply_neighbour_bonus
from pipeline.query.response import Scored


def row(memory_id: str, score: float) -> Scored:
    return Scored(Candidate({"id": memory_id}, "vector", "vector"), {}, score)


def test_bonus_is_a_share_of_the_best_neighbour_before_any_bonus():
    rows = [row("a", 0.9), row("b", 0.2), row("c", 0.5), row("far", 0.3)]
    # chain a ← b ← c (b follows a, c follows b); "far" is adjacent to nothing in the pool
    apply_neighbour_bonus(rows, [("b", "a"), ("c", "b")], 0.2)
    scores = {r.id: round(r.score, 6) for r in rows}
    assert scores == {"a": round(0.9 + 0.2 * 0.2, 6), "b": round(0.2 + 0.2 * 0.9, 6),
                      "c": round(0.5 + 0.2 * 0.2, 6), "far": 0.3}
    assert rows[1].components["neighbour"] == 0.2 * 0.9
    assert "neighbour" not in rows[3].components


def test_off_or_outside_the_pool_changes_nothing():
    rows = [row("a", 0.9), row("b", 0.2)]
    apply_neighbour_bonus(rows, [("b", "a")], 0.0)
    apply_neighbour_bonus(rows, [("b", "gone"), ("gone", "a")], 0.5)
    assert [r.score for r in rows] == [0.9, 0.2]
