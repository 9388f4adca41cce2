"""The query without its names (pipeline/query/names.py) and the combined query vector."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.config import Settings
from pipeline.query.candidates import CandidateSources, VectorStatus
from pipeline.query.names import without_names
from tests.unit.fake_recall_sources import RecordingEmbedder


@pytest.mark.parametrize("text, expected", [
    ("What are Kate's hobbies?", "What are hobbies?"),
    ("Which cities have both, Kate and Elise, been to?", "Which cities have both, and, been to?"),
    ("What LGBTQ events has Caroline attended in May 2023?", "What LGBTQ events has attended in May 2023?"),
    ("Did Bob’s dog run on Monday?", "Did dog run on Monday?"),
])
def test_names_are_left_out(text, expected):
    assert without_names(text) == expected


@pytest.mark.parametrize("text", ["what happened to the build", "Caroline", "Kate went home. Where did she go?",
                                  "Where did I leave the LGBTQ flyer?", "", None])
def test_no_second_query_without_a_name(text):
    assert without_names(text) is None


def _embedder():
    """Kate's texts point one way, every other text the other."""
    return RecordingEmbedder(lambda text: [1.0, 0.0] if "Kate" in text else [0.0, 1.0])


def _sources(embedder):
    return CandidateSources(lambda: None, lambda: None, lambda: embedder, lambda: 2)


def test_the_query_vector_sums_both_in_one_call():
    embedder = _embedder()
    vector = _sources(embedder).query_vector("What are Kate's hobbies?", VectorStatus(), 1.0)
    assert embedder.calls == [["What are Kate's hobbies?", "What are hobbies?"]]
    assert np.allclose(vector, [2 ** -0.5, 2 ** -0.5])
    weighted = _sources(_embedder()).query_vector("What are Kate's hobbies?", VectorStatus(), 0.5)
    assert np.allclose(weighted, np.array([1.0, 0.5]) / np.linalg.norm([1.0, 0.5]))


def test_off_or_nameless_queries_embed_once():
    embedder = _embedder()
    assert _sources(embedder).query_vector("What are Kate's hobbies?", VectorStatus(), 0.0) == [1.0, 0.0]
    assert _sources(embedder).query_vector("what are the hobbies", VectorStatus(), 1.0) == [0.0, 1.0]
    assert embedder.calls == [["What are Kate's hobbies?"], ["what are the hobbies"]]


def test_the_setting_reaches_the_search_policy():
    from pipeline.query.engine import RecallEngine

    engine = RecallEngine(Settings(recall_query_nameless_weight=0.75), lambda: None, lambda: None, lambda: _embedder())
    assert engine._policy.nameless_weight == 0.75
