"""The neighbour bonus: adjacent candidates share a fraction of each other's score, once."""

from __future__ import annotations

import pytest

from pipeline.query.candidates import Candidate
from pipeline.query.neighbours import apply_neighbour_bonus, same_speaker
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


def test_turns_two_apart_add_their_own_share():
    rows = [row("q", 0.8), row("reply", 0.1), row("answer", 0.4), row("other", 0.3)]
    # q ← reply ← answer: "answer" is two steps after "q"; only the far pair is in the pool's reads here
    apply_neighbour_bonus(rows, [], 0.15, [("answer", "q")], 0.1)
    scores = {r.id: round(r.score, 6) for r in rows}
    assert scores == {"q": round(0.8 + 0.1 * 0.4, 6), "reply": 0.1, "answer": round(0.4 + 0.1 * 0.8, 6), "other": 0.3}


def test_near_and_far_shares_add_up_from_scores_before_any_bonus():
    rows = [row("a", 0.9), row("b", 0.2), row("c", 0.5)]
    apply_neighbour_bonus(rows, [("b", "a"), ("c", "b")], 0.2, [("c", "a")], 0.1)
    scores = {r.id: round(r.score, 6) for r in rows}
    assert scores == {"a": round(0.9 + 0.2 * 0.2 + 0.1 * 0.5, 6), "b": round(0.2 + 0.2 * 0.9, 6),
                      "c": round(0.5 + 0.2 * 0.2 + 0.1 * 0.9, 6)}
    assert rows[2].components["neighbour"] == pytest.approx(0.2 * 0.2 + 0.1 * 0.9)


def test_far_weight_off_ignores_far_pairs():
    rows = [row("a", 0.9), row("c", 0.5)]
    apply_neighbour_bonus(rows, [], 0.2, [("c", "a")], 0.0)
    assert [r.score for r in rows] == [0.9, 0.5]


def said(memory_id: str, content: str, score: float) -> Scored:
    return Scored(Candidate({"id": memory_id, "content": content}, "vector", "vector"), {}, score)


def test_same_speaker_keeps_only_one_speakers_pairs_two_apart():
    rows = [said("q", "Kate: Did you go skiing?", 0.8), said("a", "Emi: yes, on Sunday", 0.4),
            said("k2", "kate: it was cold", 0.3), said("plain", "no label here", 0.2)]
    pairs = [("k2", "q"), ("a", "q"), ("plain", "a"), ("gone", "q")]
    # the case of a label does not matter; an unlabelled side, or one outside the rows, cannot cross speakers
    assert same_speaker(rows, pairs) == [("k2", "q"), ("plain", "a"), ("gone", "q")]
