from datetime import datetime, timedelta, timezone

import pytest

from pipeline.config import RecallProfile
from pipeline.query.keywords import extract_keywords, fulltext_terms
from pipeline.query.scoring import RecencyPolicy, final_score, score_components

NOW = datetime(2025, 3, 10, 10, 30, tzinfo=timezone.utc)


def test_spec_worked_example_scores_0_792():
    """recall-operations.md: vector 0.82, keyword 2/3, tag 1/3, importance .9, confidence .9, recency .7."""
    memory = {
        "content": "Chose PostgreSQL over MongoDB for the primary database.",
        "tags": ["project-alpha", "database"],
        "importance": 0.9,
        "confidence": 0.9,
        "type": "Decision",
        "timestamp": (NOW - timedelta(days=54)).isoformat(),
    }
    query = "PostgreSQL database decisions"
    keywords = extract_keywords(query)
    assert keywords == ["postgresql", "database", "decisions"]
    components = score_components(
        memory=memory, query=query, keywords=keywords, vector=0.82, now=NOW, recency=RecencyPolicy(180, "linear")
    )
    assert components["keyword"] == pytest.approx(2 / 3)
    assert components["tag"] == pytest.approx(1 / 3)
    assert components["recency"] == pytest.approx(0.7)
    assert components["evidence"] == pytest.approx(0.82)
    assert components["relevance_gated"] is False
    expected_keys = {"vector", "keyword", "metadata", "relation", "tag", "importance", "confidence", "recency",
                     "exact", "relevance", "context", "evidence", "relevance_gated"}
    assert set(components) == expected_keys
    assert round(final_score(components, RecallProfile.AUTOMEM.weights), 3) == 0.792


def test_recency_curves():
    linear, exp = RecencyPolicy(180, "linear"), RecencyPolicy(180, "exp")
    half = (NOW - timedelta(days=180)).isoformat()
    assert linear.score(half, NOW) == 0.0
    assert exp.score(half, NOW) == pytest.approx(0.5)
    assert linear.score(None, NOW) == 0.0
    assert linear.score("garbage", NOW) == 0.0


def test_exact_match_against_tags():
    memory = {"content": "x", "tags": ["Project-Alpha"], "importance": 0, "confidence": 0}
    components = score_components(memory=memory, query="project-alpha", keywords=["project-alpha"], vector=0,
                                  now=NOW, recency=RecencyPolicy(180, "linear"))
    assert components["exact"] == 1.0 and components["tag"] == 1.0


def test_fulltext_terms_are_safe_for_the_query_language():
    assert fulltext_terms(extract_keywords("Robert'); DROP|*@ graph -- \"x\" C++")) == ["robert", "drop", "graph"]
