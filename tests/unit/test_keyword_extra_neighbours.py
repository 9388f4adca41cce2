"""The wider keyword channel's own candidates: the neighbour shares they pass (RECALL_KEYWORD_EXTRA_GIVES) and the
cosine they need to join the pool (RECALL_KEYWORD_EXTRA_MIN_VECTOR)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from pipeline.config import Settings
from pipeline.graph import Scope
from pipeline.query.candidates import Candidate
from pipeline.query.context import ContextProfile
from pipeline.query.neighbours import apply_neighbour_bonus
from pipeline.query.response import Scored
from pipeline.query.request import ContextHints, RecallRequest
from pipeline.query.search import QuerySearch, SearchContext, SearchPolicy, _admit_metadata_matches
from tests.unit.fake_recall_sources import ScriptedSources


def _row(memory_id: str, score: float) -> Scored:
    return Scored(Candidate({"id": memory_id, "content": ""}, "vector", "qdrant"), {}, score)


def test_silent_members_pass_none_of_that_share_and_still_take_it():
    def bonuses(silent: frozenset = frozenset(), far_silent: frozenset = frozenset()) -> dict[str, float]:
        rows = [_row("a", 1.0), _row("b", 0.5), _row("c", 0.2)]
        apply_neighbour_bonus(rows, [("b", "a"), ("c", "b")], 0.1, [("c", "a")], 0.1, silent, far_silent)
        return {r.id: round(r.components.get("neighbour", 0.0), 6) for r in rows}

    assert bonuses() == {"a": 0.07, "b": 0.1, "c": 0.15}
    assert bonuses(frozenset({"a"})) == {"a": 0.07, "b": 0.02, "c": 0.15}  # a still takes from b
    assert bonuses(far_silent=frozenset({"a"})) == {"a": 0.07, "b": 0.1, "c": 0.05}  # c loses a's two-apart share


def _memory(memory_id: str, content: str) -> dict:
    return {"id": memory_id, "content": content, "tags": []}


# no "Name:" label on any turn, so the same-speaker rule keeps every pair two apart
NEAR = [_memory(f"near{i}", f"what a day {i}") for i in range(4)]
FIRST = _memory("first", "kate said the hobbies list is long")        # the first keyword slot
SECOND = _memory("second", "hey kate")                                 # the second slot: the wider channel's
TOPIC = _memory("topic", "my hobbies are skiing and cooking")         # the topic search's
# (later, earlier, steps apart): each keyword candidate sits beside a vector candidate
CHAINS = [("second", "near0", 2), ("topic", "near1", 1), ("first", "near2", 2), ("near3", "second", 1)]


class _Graph:
    def read(self, query, params):
        ids = set(params["ids"])
        return [row for row in CHAINS if row[0] in ids and row[1] in ids]


def _rows(gives: str, per_result: int = 2, topic: int = 1, floor: float = 0.0) -> dict:
    settings = Settings(recall_keyword_per_result=per_result, recall_keyword_topic_per_result=topic,
                        recall_keyword_extra_gives=gives, recall_keyword_extra_min_vector=floor,
                        recall_metadata_search_enabled=False,
                        search_weight_neighbour=0.1, search_weight_neighbour_far=0.1)
    ctx = SearchContext(Scope(), ContextProfile.build(ContextHints(), settings.context_bonuses),
                        datetime.now(timezone.utc), current_only=False)
    # the text index ranks FIRST over SECOND; the topic search (no names) finds TOPIC
    sources = ScriptedSources(NEAR, lambda keywords: [FIRST, SECOND] if "kate's" in keywords else [TOPIC], graph=_Graph())
    rows, _ = QuerySearch(sources, SearchPolicy.from_settings(settings)).run(  # type: ignore[arg-type]
        RecallRequest(query="What are Kate's hobbies?", limit=1), ctx, "score")
    return {row.id: row for row in rows}


def _shared(rows: dict) -> set[str]:
    return {memory_id for memory_id, row in rows.items() if row.components.get("neighbour")}


def test_off_by_default():
    assert Settings().recall_keyword_extra_gives == "both"


def test_only_what_the_wider_channel_alone_admits_is_marked():
    rows = _rows("both")
    assert {i for i, row in rows.items() if row.candidate.widened} == {"second", "topic"}
    assert not _rows("both", per_result=1, topic=0)["first"].candidate.widened


def test_both_lets_every_pool_member_give_and_get():
    assert _shared(_rows("both")) == {"near0", "near1", "near2", "near3", "second", "topic", "first"}


def test_none_keeps_them_from_passing_any_share():
    rows = _rows("none")
    # near0, near1 and near3 (each beside or two from second or topic) get nothing; the extras
    # still take theirs, and first (the first slot) still shares with near2
    assert _shared(rows) == {"near2", "second", "topic", "first"}
    assert rows["second"].components["neighbour"] == _rows("both")["second"].components["neighbour"]


def test_adjacent_keeps_them_from_passing_the_two_apart_share():
    rows = _rows("adjacent")
    # second's two-apart share to near0 is gone; its adjacent one to near3 and what it takes stay
    assert _shared(rows) == {"near1", "near2", "near3", "second", "topic", "first"}
    assert rows["second"].components["neighbour"] == _rows("both")["second"].components["neighbour"]


def test_far_keeps_them_from_passing_the_adjacent_share():
    rows = _rows("far")
    # topic's adjacent share to near1 and second's to near3 are gone; second's two-apart one to near0 stays
    assert _shared(rows) == {"near0", "near2", "second", "topic", "first"}


@pytest.mark.parametrize("gives", ["adjacent", "far", "none"])
def test_without_the_wider_channel_nothing_changes(gives):
    plain = _rows("both", per_result=1, topic=0)
    scores = {i: r.score for i, r in _rows(gives, per_result=1, topic=0).items()}
    assert scores == {i: r.score for i, r in plain.items()}


def test_a_metadata_match_is_no_longer_the_wider_channels_own():
    pool = [Candidate(SECOND, "keyword", "qdrant", widened=True)]
    _admit_metadata_matches(pool, [Candidate(SECOND, "metadata", "graph", metadata=0.8)])
    assert len(pool) == 1 and not pool[0].widened and pool[0].metadata == 0.8


def test_a_cosine_floor_keeps_the_wider_channels_own_far_candidates_out_and_no_other():
    # ScriptedSources: vector hits at cosine 0.5, every keyword hit at 0.3
    assert set(_rows("both", floor=0.3)) == {"near0", "near1", "near2", "near3", "first", "second", "topic"}
    kept = _rows("both", floor=0.35)
    assert set(kept) == {"near0", "near1", "near2", "near3", "first"}  # first: the first slot, not the channel's own
    # what they passed on went with them: near0 (two from second) and near1 (beside topic) get no share
    assert _shared(kept) == {"near2", "first"}
