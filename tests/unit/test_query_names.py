"""The query without its names (pipeline/query/names.py) and the combined query vector."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.config import Settings
from pipeline.query.candidates import CandidateSources, VectorStatus
from pipeline.query.names import without_names


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


class _Embedder:
    dimensions = 2

    def __init__(self):
        self.calls = []

    def embed(self, texts):
        self.calls.append(list(texts))
        return [[1.0, 0.0] if "Kate" in t else [0.0, 1.0] for t in texts]


def _sources(embedder):
    return CandidateSources(lambda: None, lambda: None, lambda: embedder, lambda: 2)


def test_the_query_vector_sums_both_in_one_call():
    embedder = _Embedder()
    vector = _sources(embedder).query_vector("What are Kate's hobbies?", VectorStatus(), 1.0)
    assert embedder.calls == [["What are Kate's hobbies?", "What are hobbies?"]]
    assert np.allclose(vector, [2 ** -0.5, 2 ** -0.5])
    weighted = _sources(_Embedder()).query_vector("What are Kate's hobbies?", VectorStatus(), 0.5)
    assert np.allclose(weighted, np.array([1.0, 0.5]) / np.linalg.norm([1.0, 0.5]))


def test_off_or_nameless_queries_embed_once():
    embedder = _Embedder()
    assert _sources(embedder).query_vector("What are Kate's hobbies?", VectorStatus(), 0.0) == [1.0, 0.0]
    assert _sources(embedder).query_vector("what are the hobbies", VectorStatus(), 1.0) == [0.0, 1.0]
    assert embedder.calls == [["What are Kate's hobbies?"], ["what are the hobbies"]]


def test_the_setting_reaches_the_search_policy():
    from pipeline.query.engine import RecallEngine

    engine = RecallEngine(Settings(recall_query_nameless_weight=0.75), lambda: None, lambda: None, lambda: _Embedder())
    assert engine._policy.nameless_weight == 0.75
