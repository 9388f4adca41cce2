"""Recall profiles: the ranking recipes ``RECALL_PROFILE`` chooses between.

A profile is the set of ranking settings that were measured together: the score weights and
the shape of the candidate search (keyword search on every query or only to fill, how many
full-text candidates per result, how much wider a tag-scoped vector fetch looks). Mixing
values from two profiles gives a ranking nobody measured, so each is one typed value here and
the settings' defaults are read from ``TUNED`` (docs/recall.md, "Profiles").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from pydantic import BaseModel

KeywordSearch = Literal["fill", "always"]


class ScoringWeights(BaseModel, frozen=True):
    """Weights of the hybrid recall score (see spec: recall-operations, Hybrid Scoring).

    The first ten are the spec's weighted components; ``temporal`` weighs the recency_bias
    re-rank; ``lexical``, ``time_mention``, ``date_match``, ``asks`` and the two ``neighbour`` shares are
    mempipe's additions (0 turns each off). No defaults: a profile or the settings supply every one.
    """

    vector: float
    keyword: float
    metadata: float
    exact: float
    importance: float
    confidence: float
    recency: float
    tag: float
    relation: float
    relevance: float
    temporal: float
    lexical: float
    time_mention: float
    date_match: float
    asks: float  # subtracted: × the share of a candidate's text in questions (query/asks.py)
    neighbour: float
    neighbour_far: float


@dataclass(frozen=True)
class RecallProfile:
    """One ranking recipe: the weights and the candidate search measured with them."""

    name: Literal["tuned", "automem"]
    weights: ScoringWeights
    keyword_search: KeywordSearch
    keyword_per_result: int
    scoped_fetch_factor: int
    query_nameless_weight: float  # the query also embedded without its names (query/names.py); 0 = off

    TUNED: ClassVar[RecallProfile]
    AUTOMEM: ClassVar[RecallProfile]

    def settings(self) -> dict[str, object]:
        """The Settings fields this profile decides, by field name, with its values."""
        return {
            "recall_keyword_search": self.keyword_search,
            "recall_keyword_per_result": self.keyword_per_result,
            "recall_scoped_fetch_factor": self.scoped_fetch_factor,
            "recall_query_nameless_weight": self.query_nameless_weight,
            **{f"search_weight_{name}": value for name, value in self.weights.model_dump().items()},
        }

    @classmethod
    def named(cls, name: str) -> RecallProfile:
        return {"tuned": cls.TUNED, "automem": cls.AUTOMEM}[name]


# AutoMem's documented weights (spec: recall-operations, the default weight configuration) and
# its sequential keyword search: for a deployment that must rank exactly as AutoMem does.
RecallProfile.AUTOMEM = RecallProfile(
    name="automem",
    weights=ScoringWeights(
        vector=0.35, keyword=0.35, metadata=0.35, exact=0.20, importance=0.10, confidence=0.05, recency=0.10,
        tag=0.20, relation=0.25, relevance=0.0, temporal=0.10,
        lexical=0.0, time_mention=0.0, date_match=0.0, asks=0.0, neighbour=0.0, neighbour_far=0.0,
    ),
    keyword_search="fill",
    keyword_per_result=2,
    scoped_fetch_factor=2,
    query_nameless_weight=0.0,
)

# The shipped default, measured on LoCoMo (docs/recall.md, "Profiles"): full-text search on every
# text query, vector similarity weighed over keyword match (BM25 over the pool already weighs the
# words), and the when-question and neighbouring-turn bonuses on.
RecallProfile.TUNED = RecallProfile(
    name="tuned",
    weights=RecallProfile.AUTOMEM.weights.model_copy(update={
        "vector": 0.5, "keyword": 0.1, "lexical": 0.1, "time_mention": 0.1, "neighbour_far": 0.1,
        "date_match": 0.1,  # issue 23: LoCoMo dev r@10 +0.010, REALTALK dev +0.007
        # issue 23: questions' share of a candidate's text, subtracted; measured together with the
        # adjacent-turn share lowered from 0.15 (a question now passes less to its reply)
        "asks": 0.15, "neighbour": 0.1,
    }),
    keyword_search="always",
    # issue 23 (session 41): two per result with the topic search and a cosine floor for the
    # wider channel's own candidates; issue 7 had cut it to 1 for ~1.4 ms at 100k
    keyword_per_result=2,
    scoped_fetch_factor=1,
    query_nameless_weight=1.0,  # issue 23: LoCoMo dev r@10 +0.016, REALTALK dev +0.064
)
