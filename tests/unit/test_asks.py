"""Memories that only ask: the asks stage of the hybrid score (SEARCH_WEIGHT_ASKS)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from pipeline.config import Settings
from pipeline.graph import Scope
from pipeline.labelled import split_label
from pipeline.query.asks import question_share
from pipeline.query.candidates import Candidate
from pipeline.query.context import ContextProfile
from pipeline.query.request import ContextHints
from pipeline.query.search import QuerySearch, SearchContext, SearchPolicy


@pytest.mark.parametrize("content, share", [
    ("Nicolas: Do anything interesting today?", 1.0),
    ("elise: Hey Kate! What about you?", 15 / 24),              # in characters: "Hey Kate!" tells, the rest asks
    ("Kate: I love skiing. You?", 4 / 18),
    ("Kate: I love skiing, it's my favourite sport", 0.0),
    ("Really?! \"Who said that?\"", 1.0),                       # trailing ! and closing quotes
    ("Is it done?\nYes, at 10:30.", 11 / 25),                   # unlabelled content, a line break
    ("Question: the plan is fixed.", 0.0),                     # a label is not part of the text
    ("", 0.0),
    (None, 0.0),
])
def test_question_share(content, share):
    assert question_share(content) == pytest.approx(share)


def test_split_label():
    assert split_label("Jon Smith: Hi there") == ("Jon Smith", "Hi there")
    assert split_label("https://example.com is down") == (None, "https://example.com is down")


def _score(weight: float, query: str | None):
    settings = Settings(recall_profile="automem", search_weight_asks=weight, recall_metadata_search_enabled=False)
    ctx = SearchContext(Scope(), ContextProfile.build(ContextHints(), settings.context_bonuses), datetime.now(timezone.utc),
                        True)
    contents = ["Nicolas: What hobbies do you have?", "Nicolas: I like skating! You?", "Nicolas: I like skating!"]
    pool = [Candidate({"id": str(i), "content": c}, "vector", "qdrant", vector=0.6) for i, c in enumerate(contents)]
    return QuerySearch(None, SearchPolicy.from_settings(settings)).score(pool, ctx, query, [], gate=False, lexical=True)


def test_a_turn_that_only_asks_loses_the_weight():
    rows = _score(0.1, "What hobbies does Nicolas have?")
    assert [row.components["asks"] for row in rows] == pytest.approx([1.0, 4 / 19, 0.0])
    assert rows[0].score == pytest.approx(rows[2].score - 0.1)
    assert rows[1].score == pytest.approx(rows[2].score - 0.1 * 4 / 19)


def test_off_without_the_weight_or_a_text_query():
    assert all("asks" not in row.components for row in _score(0.0, "What hobbies does Nicolas have?"))
    assert all("asks" not in row.components for row in _score(0.1, None))
    assert Settings(search_weight_asks=0.2).scoring_weights.asks == 0.2
    assert Settings(recall_profile="automem").scoring_weights.asks == 0.0
