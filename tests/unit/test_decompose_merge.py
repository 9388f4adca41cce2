"""auto_decompose's merge: sub-queries widen the question's pool, the question scores it.

A name-only sub-query ("Caroline") matches every turn of that person on exact, tag and keyword
at once; scored on its own and merged by raw score, those turns took the whole top (LoCoMo
recall@10 0.015). Widening keeps them as candidates but ranks them by the question.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from pipeline.config import Settings
from pipeline.graph import Scope
from pipeline.query.candidates import Candidate
from pipeline.query.context import ContextProfile
from pipeline.query.decompose import decompose
from pipeline.query.request import ContextHints, RecallRequest
from pipeline.query.search import QuerySearch, SearchContext, SearchPolicy

QUESTION = "What did Caroline say about the adoption agency?"
EVIDENCE = {"id": "evidence", "content": "Caroline: I contacted an adoption agency last week.", "tags": ["caroline"],
            "metadata": {"speaker": "Caroline"}}
OTHER = {"id": "other", "content": "Melanie: the agency called me about adoption papers.", "tags": ["melanie"],
         "metadata": {"speaker": "Melanie"}}
CHATTER = [{"id": f"chatter{i}", "content": f"Caroline: nice weather today {i}", "tags": ["caroline"],
            "metadata": {"speaker": "Caroline"}} for i in range(6)]
# cosine of each memory to each query's vector (the fake embedder gives every text its own vector)
SIMILARITY = {
    QUESTION: {"evidence": 0.8, "other": 0.6, **{c["id"]: 0.2 for c in CHATTER}},
    "Caroline": {"evidence": 0.3, "other": 0.1, **{c["id"]: 0.9 for c in CHATTER}},
}


class _Sources:
    """Vector search only: each query's vector finds what SIMILARITY says it is close to."""

    def __init__(self):
        self.memories = {m["id"]: m for m in [EVIDENCE, OTHER, *CHATTER]}
        self.rescored: list[str] = []

    def query_vector(self, text, status, nameless_weight=0.0, nameless_form="drop"):
        return [text]  # stands for the embedding of ``text``

    def vector(self, vector, scope, limit, status, query):
        status.enabled = status.matched = True
        near = sorted(SIMILARITY[vector[0]].items(), key=lambda kv: -kv[1])
        if vector[0] == QUESTION:
            near = near[:2]  # the question's own search misses the chatter
        return [Candidate(self.memories[i], "vector", "qdrant", vector=s, match_score=s, query=query) for i, s in near[:limit]]

    def keyword(self, keywords, scope, limit, query, rerank=None, read=0, source="graph", vector=None):
        return []  # "fill" asks when the vector pool is short: nothing more to find here

    def add_relevance(self, candidates):
        pass  # no memory here has been scored by decay

    def score_vectors(self, vector, candidates):
        for candidate in candidates:
            if candidate.vector == 0.0:
                self.rescored.append(candidate.id)
                candidate.vector = SIMILARITY[vector[0]][candidate.id]


def _search() -> tuple[QuerySearch, _Sources, SearchContext]:
    settings = Settings(recall_profile="automem", recall_metadata_search_enabled=False)
    policy = SearchPolicy.from_settings(settings)
    sources = _Sources()
    ctx = SearchContext(Scope(), ContextProfile.build(ContextHints(), settings.context_bonuses), datetime.now(timezone.utc),
                        current_only=False)
    return QuerySearch(sources, policy), sources, ctx  # type: ignore[arg-type]


def test_the_name_alone_is_one_of_the_sub_queries():
    assert decompose(QUESTION)[:2] == [QUESTION, "Caroline"]


def test_name_only_sub_query_scored_alone_outranks_the_evidence():
    """The failure being fixed: the sub-query's own scores put the chatter above the evidence."""
    search, _, ctx = _search()
    question = search.run(RecallRequest(query=QUESTION, limit=10), ctx, "score")[0]
    name_only = search.run(RecallRequest(query="Caroline", limit=10), ctx, "score")[0]
    evidence_score = next(r.score for r in question if r.id == "evidence")
    assert all(r.score > evidence_score for r in name_only if r.id.startswith("chatter"))


def test_widened_pool_is_ranked_by_the_question():
    search, sources, ctx = _search()
    rows, fetched, duplicates = search.run_widened(RecallRequest(query=QUESTION, limit=10), ctx, "score",
                                                   ["Caroline"], per_query=10)
    order = [r.id for r in rows]
    assert order[:2] == ["evidence", "other"]  # the question's own best stay on top
    assert set(order[2:]) == {c["id"] for c in CHATTER}  # the sub-query's finds joined the pool...
    by_id = {r.id: r for r in rows}
    for chatter in CHATTER:  # ...measured against the question, not against "Caroline" (0.9)
        assert by_id[chatter["id"]].components["vector"] == pytest.approx(0.2)
        assert by_id[chatter["id"]].candidate.query == QUESTION
    assert sorted(sources.rescored) == sorted(c["id"] for c in CHATTER)
    assert duplicates == 2 and fetched == 0  # evidence and other were found by both searches


def test_per_query_limit_bounds_each_sub_query_fetch():
    search, _, ctx = _search()
    rows, _, _ = search.run_widened(RecallRequest(query=QUESTION, limit=10), ctx, "score", ["Caroline"], per_query=1)
    # the sub-query's fetch is sized by per_query_limit (× overfetch 4), not by limit (10 × 4)
    assert sorted(r.id for r in rows) == sorted(["evidence", "other", "chatter0", "chatter1", "chatter2", "chatter3"])
