"""The held-out scoring of the query adapter takes each question's ranking from its own conversation's map."""

from __future__ import annotations

import pytest

from ops.bench import quality_held_out as held


def _ranking(ranked, evidence=("D1:1",), category=1):
    return {"query": "q", "category": category, "evidence": list(evidence), "ranked": list(ranked)}


def test_each_conversation_is_scored_with_the_map_fitted_without_it(monkeypatch, tmp_path):
    monkeypatch.setattr(held, "load", lambda folder: [("a", {"n": 1}), ("b", {"n": 2})])
    monkeypatch.setattr(held, "questions", lambda name, data: range(data["n"]))
    miss, hit = _ranking(["D9:9"]), _ranking(["D1:1"])
    corpus = {"corpus": "dev", "variants": [
        {"settings": {"RECALL_QUERY_ADAPTER": "off"}, "rankings": [miss, miss, miss]},
        {"settings": {"RECALL_QUERY_ADAPTER": f"{tmp_path}/held-out-a.npz"}, "rankings": [hit, miss, miss]},
        {"settings": {"RECALL_QUERY_ADAPTER": f"{tmp_path}/held-out-b.npz"}, "rankings": [miss, hit, miss]},
        {"settings": {"RECALL_QUERY_ADAPTER": "/elsewhere/held-out-b.npz"}, "rankings": [hit, hit, hit]},
    ]}
    off, chosen = held.held_out_rankings(corpus, tmp_path)
    assert off == [miss, miss, miss] and chosen == [hit, hit, miss]  # a's first question, b's two
    assert held.summary(chosen)["overall"] == (3, pytest.approx(2 / 3), pytest.approx(2 / 3))
    corpus["variants"] = corpus["variants"][:2]
    with pytest.raises(SystemExit, match="missing: \\['b'\\]"):
        held.held_out_rankings(corpus, tmp_path)
