"""The topic keyword search: the query's words less its names (RECALL_KEYWORD_TOPIC_PER_RESULT)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from pipeline.config import Settings
from pipeline.graph import Scope
from pipeline.query.context import ContextProfile
from pipeline.query.keywords import extract_keywords
from pipeline.query.request import ContextHints, RecallRequest
from pipeline.query.search import QuerySearch, SearchContext, SearchPolicy
from pipeline.query.topics import topic_keywords
from tests.unit.fake_recall_sources import ScriptedSources


@pytest.mark.parametrize("query, topics", [
    ("What are Kate's hobbies?", ["hobbies"]),                         # the possessive goes with the name
    ("What do Elise and Kate have in common?", ["common"]),
    ("When did Caroline go to the LGBTQ support group?", ["go", "lgbtq", "support", "group"]),  # acronyms stay
    ("What did Elise play 5 Jan 2024?", ["play", "jan", "2024"]),     # month abbreviations are no names
    ("Where did she go in March?", []),                                # no name: no second search
    ("Kate?", []),                                                     # only a name: nothing left
    ("what is up", []),
])
def test_topic_keywords(query, topics):
    assert topic_keywords(query, extract_keywords(query)) == topics


HELLO = {"id": "hello", "content": "elise: Hey Kate!", "tags": []}
SKIING = {"id": "skiing", "content": "Emi: skiing is my favourite of my hobbies", "tags": []}
NEAR = [{"id": f"near{i}", "content": f"Emi: what a day {i}", "tags": []} for i in range(4)]


def _run(query: str, topic_per_result: int) -> tuple[list[str], ScriptedSources]:
    settings = Settings(recall_keyword_per_result=1, recall_keyword_topic_per_result=topic_per_result,
                        recall_metadata_search_enabled=False, search_weight_neighbour=0, search_weight_neighbour_far=0)
    # a text index that ranks the name first
    sources = ScriptedSources(NEAR, lambda keywords: [HELLO, SKIING] if "kate's" in keywords else [SKIING])
    ctx = SearchContext(Scope(), ContextProfile.build(ContextHints(), settings.context_bonuses),
                        datetime.now(timezone.utc), current_only=False)
    rows, _ = QuerySearch(sources, SearchPolicy.from_settings(settings)).run(  # type: ignore[arg-type]
        RecallRequest(query=query, limit=1), ctx, "score")
    return sorted(r.id for r in rows if not r.id.startswith("near")), sources


def test_on_by_default_and_0_turns_it_off():
    assert Settings().recall_keyword_topic_per_result == 2
    ids, sources = _run("What are Kate's hobbies?", 0)
    assert ids == ["hello"] and sources.searches == [(["kate's", "hobbies"], 1)]


def test_the_topic_search_adds_its_share_without_the_names():
    ids, sources = _run("What are Kate's hobbies?", 1)
    assert ids == ["hello", "skiing"]
    assert sources.searches == [(["kate's", "hobbies"], 1), (["hobbies"], 1)]


def test_no_second_search_without_a_name():
    _, sources = _run("What are the hobbies?", 2)
    assert len(sources.searches) == 1
