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
from pipeline.query.when import asks_when, named_periods, states_time


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


# --- dates the query names (SEARCH_WEIGHT_DATE_MATCH) ----------------------------------------

def _day(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


@pytest.mark.parametrize("query, start, end", [
    ("What kind of pasta did Kate make on 29 Dec 2023?", "2023-12-29", "2023-12-31"),
    ("Who did Maria have dinner with on May 3, 2023?", "2023-05-03", "2023-05-05"),
    ("What did Elise play 5th of January 2024?", "2024-01-05", "2024-01-07"),
    ("What happened on 2024-02-29?", "2024-02-29", "2024-03-02"),
    ("What setback did Melanie face in October 2023?", "2023-10-01", "2023-11-04"),
    ("Any news from Sept. 2022", "2022-09-01", "2022-10-04"),
])
def test_named_periods(query, start, end):
    assert named_periods(query) == ((_day(start), _day(end)),)


@pytest.mark.parametrize("query", ["May I have 3 apples?", "When did she go?", "the 2023 budget", "last week's plan", None])
def test_no_named_period(query):
    assert named_periods(query) == ()


def test_a_named_date_lifts_the_candidates_written_then():
    settings = Settings(recall_profile="automem", search_weight_date_match=0.1, recall_metadata_search_enabled=False)
    policy = SearchPolicy.from_settings(settings)
    ctx = SearchContext(Scope(), ContextProfile.build(ContextHints(), settings.context_bonuses), datetime.now(timezone.utc),
                        True)
    stamps = ["2024-01-06T10:00:00+00:00", "2024-01-20T10:00:00+00:00", None]
    pool = [Candidate({"id": str(i), "content": "we played chess", "timestamp": t}, "vector", "qdrant", vector=0.5)
            for i, t in enumerate(stamps)]
    search = QuerySearch(None, policy)
    rows = search.score(pool, ctx, "What did Elise play on 5 Jan 2024?", [], gate=False, lexical=True)
    assert [row.components["date_match"] for row in rows] == [1.0, 0.0, 0.0]
    assert rows[0].score == pytest.approx(rows[1].score + 0.1)
    plain = search.score(pool, ctx, "What did Elise play?", [], gate=False, lexical=True)
    assert all("date_match" not in row.components for row in plain)
    assert Settings(search_weight_date_match=0.2).scoring_weights.date_match == 0.2
    assert Settings(recall_profile="automem").scoring_weights.date_match == 0.0
