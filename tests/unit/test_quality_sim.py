"""ops.bench.quality_sim: re-ranking a dumped pool from its components."""

from __future__ import annotations

from ops.bench.quality_sim import rank, replay
from pipeline.config import RecallProfile

WEIGHTS = {**RecallProfile.AUTOMEM.weights.model_dump(), "lexical": 0.1}  # automem + the pool BM25


def _question(query: str) -> dict:
    return {"query": query, "category": 2, "evidence": ["D1:2"], "results": [
        {"dia": "D1:1", "content": "the support group was powerful", "components": {"vector": 0.8}},
        {"dia": "D1:2", "content": "I went to the support group yesterday", "components": {"vector": 0.7}},
        {"dia": "D2:5", "content": "painting", "components": {"vector": 0.75, "lexical": 1.0}},
    ]}


def test_scores_are_recomputed_from_the_components_and_weights():
    question = _question("When did she go to the support group?")
    assert rank(question, WEIGHTS) == ["D2:5", "D1:1", "D1:2"]  # 0.3625 > 0.28 > 0.245
    assert rank(question, {**WEIGHTS, "lexical": 0.0}) == ["D1:1", "D2:5", "D1:2"]
    assert rank(question, {**WEIGHTS, "time_mention": 0.2})[0] == "D1:2"  # 0.245 + 0.2 states a time
    assert rank(_question("Did she go to the support group?"), {**WEIGHTS, "time_mention": 0.2})[0] == "D2:5"


def test_neighbour_bonus_uses_the_adjacent_turn_of_the_same_session():
    question = _question("Did she go to the support group?")
    lifted = rank(question, {**WEIGHTS, "neighbour": 1.0})  # D1:1 and D1:2 lift each other; D2:5 has no neighbour
    assert lifted == ["D1:1", "D1:2", "D2:5"]


def test_replay_reports_recall_and_mrr_per_category():
    figures = replay([_question("When did she go to the support group?")], {**WEIGHTS, "time_mention": 0.2})
    assert figures["temporal"] == (1.0, 1.0, 1.0) and figures["overall"] == (1.0, 1.0, 1.0)
    assert replay([_question("When did she go?")], WEIGHTS)["overall"] == (1.0, 1.0, 1 / 3)
