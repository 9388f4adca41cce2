"""When-questions and memories that state a time: the time_mention stage of the hybrid score."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from pipeline.config import Settings
from pipeline.graph import Scope
from pipeline.query.candidates import Candidate
from pipeline.query.context import ContextProfile
from pipeline.query.keywords import extract_keywords
from pipeline.query.request import ContextHints
from pipeline.query.search import QuerySearch, SearchContext, SearchPolicy
from pipeline.query.when import asks_when, states_time


@pytest.mark.parametrize("query", [
    "When did Caroline go to the LGBTQ support group?", "  when is the next release", "How long ago was her birthday?",
    "What year did they move?", "Which month did Melanie go camping?", "In which week was it fixed?",
])
def test_questions_asking_for_a_time(query):
    assert asks_when(query)


@pytest.mark.parametrize("query", [
    "What did Caroline research?", "Where has Melanie camped?", "Whenever possible, prefer tabs?", "", None,
    "Did the deploy happen when the database was down?",  # asks whether, not when
])
def test_other_questions(query):
    assert not asks_when(query)


@pytest.mark.parametrize("content", [
    "I went to a support group yesterday", "We moved two years ago", "See you next Tuesday!", "It was on 8 May, 2023",
    "Last weekend we camped", "born in 1998", "I've been running for a few months", "this morning the build broke",
])
def test_contents_stating_a_time(content):
    assert states_time(content)


@pytest.mark.parametrize("content", [
    "The support group was so powerful.", "Painting sunsets with my kids", "Mayor of the town", "Version 3.2 shipped", "",
    None,
])
def test_contents_without_one(content):
    assert not states_time(content)


DOCS = [
    "Caroline: The LGBTQ support group was so powerful.",
    "Caroline: I went to a LGBTQ support group yesterday.",
    "Melanie: I love painting sunsets.",
]


def _scores(query: str, weight: float, main_search: bool = True):
    settings = Settings(recall_profile="automem", search_weight_time_mention=weight, recall_metadata_search_enabled=False)
    policy = SearchPolicy.from_settings(settings)
    ctx = SearchContext(Scope(), ContextProfile.build(ContextHints(), settings.context_bonuses), datetime.now(timezone.utc),
                        True)
    pool = [Candidate({"id": str(i), "content": text}, "vector", "qdrant", vector=0.5) for i, text in enumerate(DOCS)]
    return QuerySearch(None, policy).score(pool, ctx, query, extract_keywords(query), gate=False, lexical=main_search)


def test_a_when_question_lifts_the_candidates_that_state_a_time():
    query = "When did Caroline go to the LGBTQ support group?"
    plain, lifted = _scores(query, 0.0), _scores(query, 0.1)
    assert [row.components["time_mention"] for row in lifted] == [0.0, 1.0, 0.0]
    for before, after in zip(plain, lifted):
        assert after.score == pytest.approx(before.score + 0.1 * after.components["time_mention"])
    assert lifted[1].score > lifted[0].score  # the same topic, and the one that says when wins


def test_no_component_when_off_not_a_when_question_or_outside_the_main_search():
    assert all("time_mention" not in row.components for row in _scores("When did Caroline go?", 0.0))
    assert all("time_mention" not in row.components for row in _scores("Where did Caroline go?", 0.1))
    assert all("time_mention" not in row.components for row in _scores("When did Caroline go?", 0.1, main_search=False))


def test_the_setting_reaches_the_weights():
    assert Settings(search_weight_time_mention=0.25).scoring_weights.time_mention == 0.25
    assert Settings().scoring_weights.time_mention == Settings.model_fields["search_weight_time_mention"].default
