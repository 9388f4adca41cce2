"""Fakes for the query tests: recall sources with fixed vector candidates and scripted keyword hits,
and a 2-d embedder that records what it was asked to embed."""

from __future__ import annotations

from typing import Any, Callable

from pipeline.query.candidates import Candidate


class ScriptedSources:
    """Every vector search returns ``near`` (cosine 0.5) up to its limit; a keyword search returns
    ``keyword_hits(keywords)`` (cosine 0.3) up to its limit and is recorded in ``searches``."""

    def __init__(self, near: list[dict], keyword_hits: Callable[[list[str]], list[dict]], graph: Any = None):
        self._near, self._keyword_hits = near, keyword_hits
        self.graph = graph
        self.searches: list[tuple[list[str], int]] = []

    def query_vector(self, text, status, nameless_weight=0.0, nameless_form="drop"):
        return [1.0]

    def vector(self, vector, scope, limit, status, query):
        status.enabled = status.matched = True
        return [Candidate(m, "vector", "qdrant", vector=0.5, query=query) for m in self._near[:limit]]

    def keyword(self, keywords, scope, limit, query, rerank=None, read=0, source="graph", vector=None):
        self.searches.append((list(keywords), limit))
        return [Candidate(m, "keyword", "qdrant", vector=0.3, query=query) for m in self._keyword_hits(keywords)[:limit]]

    def score_vectors(self, vector, candidates):
        pass

    def add_relevance(self, candidates):
        pass  # the scripted memories hold whatever relevance score a test gives them


class RecordingEmbedder:
    """Two dimensions; ``vector_for(text)`` gives each text's vector (one fixed vector by default);
    every call's texts are kept in ``calls``."""

    dimensions = 2

    def __init__(self, vector_for: Callable[[str], list[float]] = lambda text: [1.0, 0.0]):
        self.calls: list[list[str]] = []
        self._vector_for = vector_for

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [self._vector_for(text) for text in texts]
