"""The lexical stage: BM25 over a query's candidate pool, and vector scores for keyword hits."""

from __future__ import annotations

import pytest

from pipeline.query.candidates import Candidate, CandidateSources, cosine
from pipeline.query.lexical import PoolBM25
from pipeline.vectors import VectorRecord

DOCS = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie: I love painting sunsets with my kids.",
    "Caroline: We should go to the park sometime.",
    "Caroline: Support from friends means a lot to me.",
]


def test_rare_terms_outweigh_common_ones():
    scores = PoolBM25().scores("When did Caroline go to the LGBTQ support group?", DOCS)
    assert scores[0] == 1.0  # the turn sharing the distinctive words is best, scaled to 1
    assert scores[1] == 0.0  # no shared term
    # "support" and "Caroline" (shared by several turns) count for less than "LGBTQ" and "group"
    assert 0 < scores[3] < scores[0] and 0 < scores[2] < scores[0]


def test_stemming_folds_word_forms():
    scores = PoolBM25().scores("Which paintings did Melanie paint?", DOCS)
    assert scores.index(1.0) == 1


@pytest.mark.parametrize("query, docs", [("the of and", DOCS), ("quantum chromodynamics", DOCS), ("LGBTQ", []),
                                         ("LGBTQ", ["", "..."])])
def test_no_match_scores_zero(query, docs):
    assert PoolBM25().scores(query, docs) == [0.0] * len(docs)


def test_cosine_matches_the_vector_store():
    assert cosine([1, 0], [2, 0]) == pytest.approx(1.0)
    assert cosine([1, 0], [0, 3]) == pytest.approx(0.0)
    assert cosine([1, 1], [1, 0]) == pytest.approx(0.7071, abs=1e-4)
    assert cosine([0, 0], [1, 0]) == 0.0


class _Vectors:
    def __init__(self, stored, fail=False):
        self.stored, self.fail, self.asked = stored, fail, []

    def retrieve(self, ids, with_vectors=False):
        self.asked.append((tuple(ids), with_vectors))
        if self.fail:
            raise ConnectionError("down")
        return {i: VectorRecord(i, {}, self.stored[i]) for i in ids if i in self.stored}


def _sources(vectors):
    return CandidateSources(graph=lambda: None, vectors=lambda: vectors, embedder=lambda: None, dimensions=lambda: 2)


def test_keyword_candidates_get_their_cosine_and_vector_hits_keep_theirs():
    vectors = _Vectors({"k": [0.6, 0.8], "v": [1.0, 0.0]})
    hit = Candidate({"id": "v"}, "vector", "qdrant", vector=0.9)
    keyword = Candidate({"id": "k"}, "keyword", "graph")
    gone = Candidate({"id": "missing"}, "keyword", "graph")
    _sources(vectors).score_vectors([1.0, 0.0], [hit, keyword, gone])
    assert vectors.asked == [(("k", "missing"), True)]  # only the candidates without a vector score
    assert keyword.vector == pytest.approx(0.6) and hit.vector == 0.9 and gone.vector == 0.0


def test_vector_store_failure_leaves_keyword_candidates_at_zero():
    keyword = Candidate({"id": "k"}, "keyword", "graph")
    _sources(_Vectors({}, fail=True)).score_vectors([1.0, 0.0], [keyword])
    assert keyword.vector == 0.0


# --- the pool BM25 stage in the hybrid score ---------------------------------------------------
def _scored(weight: float, lexical: bool = True):
    from datetime import datetime, timezone

    from pipeline.config import Settings
    from pipeline.graph import Scope
    from pipeline.query.context import ContextProfile
    from pipeline.query.keywords import extract_keywords
    from pipeline.query.request import ContextHints
    from pipeline.query.search import QuerySearch, SearchContext, SearchPolicy

    settings = Settings(recall_profile="automem", search_weight_lexical=weight, recall_keyword_search="always",
                        recall_metadata_search_enabled=False)
    policy = SearchPolicy.from_settings(settings)
    ctx = SearchContext(Scope(), ContextProfile.build(ContextHints(), settings.context_bonuses), datetime.now(timezone.utc),
                        True)
    pool = [Candidate({"id": str(i), "content": text}, "vector", "qdrant", vector=0.5) for i, text in enumerate(DOCS)]
    query = "When did Caroline go to the LGBTQ support group?"
    return QuerySearch(_sources(None), policy).score(pool, ctx, query, extract_keywords(query), gate=False, lexical=lexical)


def test_pool_bm25_adds_its_weighted_component_only_when_on():
    plain, boosted = _scored(0.0), _scored(0.2)
    assert all("lexical" not in row.components for row in plain)  # off: the spec's keys only
    assert [row.components["lexical"] for row in boosted] == pytest.approx(PoolBM25().scores(
        "When did Caroline go to the LGBTQ support group?", DOCS))
    for before, after in zip(plain, boosted):
        assert after.score == pytest.approx(before.score + 0.2 * after.components["lexical"])
    assert all("lexical" not in row.components for row in _scored(0.2, lexical=False))  # expansion, fallback
