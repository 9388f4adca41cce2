"""Recall's pure parts: time windows, state resolution, scope checks, decomposition, context, gate."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from pipeline.config import Settings
from pipeline.graph import Scope, TagFilter
from pipeline.query.candidates import Candidate, CandidateSources, from_payload
from pipeline.query.context import ContextProfile, language_of
from pipeline.query.decompose import decompose
from pipeline.query.expansion import entity_keys
from pipeline.query.filters import in_scope
from pipeline.query.request import ContextHints
from pipeline.query.scoring import apply_relevance_gate, has_temporal_intent, relative_recency
from pipeline.query.state import resolve_heads, validity_reason
from pipeline.query.timewindow import parse_time_query
from pipeline.relations import AUTHORABLE_TYPES, DEFAULT_EXPAND_TYPES, known_types, pattern

NOW = datetime(2025, 6, 18, 15, 30, tzinfo=timezone.utc)


# --- time windows ------------------------------------------------------------------------
@pytest.mark.parametrize("expression, start, end", [
    ("today", datetime(2025, 6, 18, tzinfo=timezone.utc), NOW),
    ("yesterday", datetime(2025, 6, 17, tzinfo=timezone.utc), datetime(2025, 6, 17, 23, 59, 59, 999999, tzinfo=timezone.utc)),
    ("last week", NOW - timedelta(days=7), NOW),
    ("Last 30 days", NOW - timedelta(days=30), NOW),
    ("past 2 weeks", NOW - timedelta(days=14), NOW),
    ("since March", datetime(2025, 3, 1, tzinfo=timezone.utc), NOW),
    ("since september", datetime(2024, 9, 1, tzinfo=timezone.utc), NOW),  # a month not yet reached: last year's
    ("March 2024", datetime(2024, 3, 1, tzinfo=timezone.utc), datetime(2024, 3, 31, 23, 59, 59, 999999, tzinfo=timezone.utc)),
    ("this month", datetime(2025, 6, 1, tzinfo=timezone.utc), NOW),
    ("before 2024", None, datetime(2024, 1, 1, tzinfo=timezone.utc)),
])
def test_time_expressions(expression, start, end):
    window = parse_time_query(expression, NOW)
    assert window is not None and window.start == start and window.end == end


@pytest.mark.parametrize("expression", ["", "whenever", "the blue one", "banana bread"])
def test_unknown_time_expressions_are_none(expression):
    assert parse_time_query(expression, NOW) is None


def test_specific_date_is_that_day():
    window = parse_time_query("15 January 2025", NOW)
    assert window.start == datetime(2025, 1, 15, tzinfo=timezone.utc)
    assert window.end.date() == window.start.date()


# --- lifecycle ------------------------------------------------------------------------------
def test_validity_reasons():
    now = NOW.timestamp()
    assert validity_reason({}, now) is None
    assert validity_reason({"archived": True}, now) == "archived"
    assert validity_reason({"t_invalid": "2025-06-01T00:00:00+00:00"}, now) == "expired"
    assert validity_reason({"t_valid": "2025-07-01T00:00:00Z"}, now) == "not_yet_valid"
    assert validity_reason({"t_valid": "2025-01-01T00:00:00Z", "t_invalid": "2026-01-01T00:00:00Z"}, now) is None


def _lookup(edges: dict[str, str], memories: dict[str, dict], calls: list):
    def lookup(ids):
        calls.append(list(ids))
        return {i: ("EVOLVED_INTO", memories[edges[i]]) for i in ids if i in edges}
    return lookup


def test_chain_resolves_to_head_and_stops_at_five_hops():
    memories = {f"m{i}": {"id": f"m{i}"} for i in range(10)}
    edges = {f"m{i}": f"m{i + 1}" for i in range(9)}
    calls: list = []
    heads = resolve_heads(["m0", "m7"], _lookup(edges, memories, calls), NOW.timestamp(), lambda m: True)
    assert heads["m0"].head["id"] == "m5" and heads["m0"].chain == ("m0", "m1", "m2", "m3", "m4", "m5")
    assert heads["m7"].head["id"] == "m9"
    assert len(calls) <= 5  # one lookup per hop, shared by all chains


def test_cycle_is_safe_and_inactive_heads_do_not_supersede():
    memories = {"a": {"id": "a"}, "b": {"id": "b"}, "c": {"id": "c", "t_invalid": "2020-01-01T00:00:00Z"}}
    heads = resolve_heads(["a"], _lookup({"a": "b", "b": "a"}, memories, []), NOW.timestamp(), lambda m: True)
    assert heads["a"].head["id"] == "b"
    # a → c where c expired: a is not superseded by anything active
    assert resolve_heads(["a"], _lookup({"a": "c"}, memories, []), NOW.timestamp(), lambda m: True) == {}
    # a → b → c(expired): the last active link wins
    assert resolve_heads(["a"], _lookup({"a": "b", "b": "c"}, memories, []), NOW.timestamp(), lambda m: True)["a"].head["id"] == "b"


# --- scope ------------------------------------------------------------------------------------
def test_in_scope_mirrors_store_filters():
    memory = {"tags": ["Slack:Channel:General", "temp:draft"], "timestamp": "2025-06-01T00:00:00+00:00", "type": "Context"}
    assert in_scope(memory, Scope(TagFilter(("slack",))))
    assert not in_scope(memory, Scope(TagFilter(("slack",), match="exact")))
    assert in_scope(memory, Scope(TagFilter(("slack:channel:general",), match="exact")))
    assert not in_scope(memory, Scope(TagFilter(("slack", "other"), mode="all")))
    assert not in_scope(memory, Scope(exclude_tags=("TEMP",)))
    assert in_scope(memory, Scope(exclude_tags=("tem",)))  # segment prefixes, not string prefixes
    assert not in_scope(memory, Scope(start_epoch=datetime(2025, 6, 2, tzinfo=timezone.utc).timestamp()))
    assert not in_scope(memory, Scope(excluded_types=frozenset({"Context"})))
    assert not in_scope({**memory, "archived": True}, Scope())
    assert in_scope(memory, Scope(TagFilter(("nope",))), check_tags=False)


# --- decomposition, entities, context -------------------------------------------------------
def test_decompose_follows_the_spec_example():
    assert decompose("React OAuth authentication patterns") == [
        "React OAuth authentication patterns", "react", "oauth", "authentication"]
    assert decompose("What does Amanda's sister do?") == ["What does Amanda's sister do?", "Amanda", "Amanda sister"]


def test_entity_keys_from_tags_and_metadata():
    keys = entity_keys([
        {"tags": ["entity:people:rachel", "x"], "metadata": {}},
        {"tags": [], "metadata": {"entities": {"people": ["Rachel", "Sarah Jones"], "organizations": ["Platform Team"]}}},
    ])
    assert keys == [("entity:people:rachel", "rachel"), ("entity:people:sarah-jones", "sarah jones"),
                    ("entity:organizations:platform-team", "platform team")]


def test_context_profile_language_and_priority():
    assert language_of("src/auth.ts") == "typescript" and language_of("README") is None
    profile = ContextProfile.build(ContextHints(active_path="src/auth.ts", priority_ids=("p1",)), Settings().context_bonuses)
    style = {"id": "s", "type": "Style", "tags": ["typescript"], "content": "use strict null checks"}
    assert profile.bonus(style) == pytest.approx(0.2 + 0.15 + 0.1)
    assert profile.bonus({"id": "p1", "content": "x"}) == pytest.approx(0.9)
    assert profile.bonus({"id": "other", "content": "x"}) == 0.0
    assert not ContextProfile.build(ContextHints(), Settings().context_bonuses).active


# --- scoring controls -------------------------------------------------------------------------
def test_relevance_gate_ramps_query_independent_components():
    components = {"evidence": 0.1, "importance": 1.0, "confidence": 1.0, "recency": 1.0, "tag": 1.0, "vector": 0.1,
                  "relevance_gated": False}
    apply_relevance_gate(components, 0.4)
    assert components["importance"] == pytest.approx(0.25) and components["vector"] == 0.1
    assert components["relevance_gated"] is True
    strong = {"evidence": 0.9, "importance": 1.0, "confidence": 1.0, "recency": 1.0, "tag": 1.0, "relevance_gated": False}
    apply_relevance_gate(strong, 0.4)
    assert strong["importance"] == 1.0 and strong["relevance_gated"] is False


def test_relative_recency_and_temporal_intent():
    assert relative_recency([10.0, 20.0, None, 15.0]) == [0.0, 1.0, 0.0, 0.5]
    assert relative_recency([5.0, 5.0]) is None
    assert has_temporal_intent("what is the latest deploy plan") and not has_temporal_intent("deploy plan")


# --- relation registry ------------------------------------------------------------------------
def test_relation_registry():
    assert len(AUTHORABLE_TYPES) == 11 and "SIMILAR_TO" not in DEFAULT_EXPAND_TYPES
    assert set(DEFAULT_EXPAND_TYPES) == set(AUTHORABLE_TYPES)
    assert known_types(["relates_to", "Bogus", "SIMILAR_TO"]) == (["RELATES_TO", "SIMILAR_TO"], ["Bogus"])
    assert pattern(["RELATES_TO", "x) DETACH DELETE (n"]) == ":RELATES_TO"


def test_exact_duplicates_collapse_to_the_best_scored_member():
    from pipeline.query.candidates import Candidate
    from pipeline.query.dedup import collapse_duplicates
    from pipeline.query.response import Scored

    def row(memory_id, score, duplicate_of=None):
        memory = {"id": memory_id, "content": "same words", "duplicate_of": duplicate_of}
        return Scored(Candidate(memory, "vector", "vector"), {}, score)

    rows = [row("copy-2", 0.9, "orig"), row("orig", 0.8), row("other", 0.7), row("copy-1", 0.6, "orig")]
    kept, folded = collapse_duplicates(rows)
    assert [r.id for r in kept] == ["copy-2", "other"]
    assert folded == 2
    assert kept[0].candidate.extra["deduped_from"] == ["copy-1", "orig"]


# --- diagnostics: entities, contradictions --------------------------------------------------
def test_named_entities_resolve_query_names_against_results():
    from pipeline.query.entities import named_entities

    results = [
        ("m1", {"tags": ["entity:people:rachel", "entity:people:tom-jones"], "metadata": {"entities": {"people": ["Sarah"]}}}),
        ("m2", {"tags": ["entity:people:rachel", "entity:places:paris"]}),
        ("m3", {"tags": ["unrelated"]}),
    ]
    found = named_entities(["What is Sarah's sister Rachel's job?", None], results)
    assert found == [
        {"name": "rachel", "type": "people", "tag": "entity:people:rachel", "result_ids": ["m1", "m2"]},
        {"name": "sarah", "type": "people", "tag": "entity:people:sarah", "result_ids": ["m1"]},
    ]
    # every word of a multi-word name must be in the query; no text, no entities
    assert [e["name"] for e in named_entities(["tom said"], results)] == []
    assert [e["name"] for e in named_entities(["Tom Jones in Paris"], results)] == ["tom jones", "paris"]
    assert named_entities([None], results) == []


def test_named_entities_report_at_most_ten():
    from pipeline.query.entities import named_entities

    results = [(f"m{i}", {"tags": [f"entity:people:p{i}"]}) for i in range(15)]
    assert len(named_entities([" ".join(f"p{i}" for i in range(15))], results)) == 10


def test_contradiction_details_report_each_pair_once_and_never_suppress():
    from pipeline.query.state import StateReport, contradiction_details

    edges = [("a", "b", True, 0.7), ("b", "a", False, 0.7), ("a", "c", False, None), ("x", "y", True, 1.0)]
    details = contradiction_details(edges, returned={"a", "b"}, suppressed={"c": "expired"})
    assert details == [
        {"id": "a", "contradicts": "b", "direction": "outgoing", "strength": 0.7, "other_returned": True},
        {"id": "a", "contradicts": "c", "direction": "incoming", "strength": None, "other_returned": False,
         "other_suppressed": "expired"},
    ]
    report = StateReport(contradictions=details)
    assert report.summary(True)["contradiction_count"] == 2 and report.summary(True)["contradictions"] == details
    assert "contradictions" not in report.summary(False) and "contradiction_count" not in report.summary(False)
    assert "contradictions" not in StateReport().summary(True)  # not looked up, not reported


def test_batched_cosines_equal_one_by_one_and_skip_missing_vectors():
    from pipeline.query.candidates import cosine, cosines

    query = [0.3, -1.0, 2.0]
    vectors = [[1.0, 0.0, 0.0], None, [0.3, -1.0, 2.0], [0.0, 0.0, 0.0], [1.0, 2.0]]
    result = cosines(query, vectors)
    assert result[0] == pytest.approx(cosine(query, vectors[0]))
    assert result[2] == pytest.approx(1.0)
    assert result[1] == result[3] == result[4] == 0.0  # missing, zero, other size
    assert cosines(query, []) == [] and cosines(query, [None]) == [0.0]


# --- relevance, read from the graph --------------------------------------------------------
class RelevanceGraph:
    """Answers the relevance read with ``scores``; records the ids asked for; fails when told."""

    def __init__(self, scores: dict, fail: bool = False):
        self.scores, self.fail, self.asked = scores, fail, []

    def read(self, cypher: str, params: dict) -> list:
        if self.fail:
            raise ConnectionError("graph down")
        self.asked.append(params["ids"])
        return [[memory_id, self.scores.get(memory_id)] for memory_id in params["ids"]]


def test_vector_hits_take_their_relevance_from_the_graph_not_an_old_payload():
    hit = Candidate(from_payload({"content": "a", "relevance_score": 0.9}, "m1"), "vector", "qdrant")
    unscored = Candidate(from_payload({"content": "b"}, "m2"), "vector", "qdrant")
    from_graph = Candidate({"id": "m3", "relevance_score": 0.4}, "keyword", "graph")
    assert "relevance_score" not in hit.memory  # an old payload's copy is not trusted
    graph = RelevanceGraph({"m1": 0.25, "m3": 0.1})
    CandidateSources(lambda: graph, lambda: None, lambda: None, lambda: 2).add_relevance([hit, unscored, from_graph])
    assert graph.asked == [["m1", "m2"]]  # one read, for the vector store's hits only
    assert hit.memory["relevance_score"] == 0.25
    assert "relevance_score" not in unscored.memory  # not scored by decay yet
    assert from_graph.memory["relevance_score"] == 0.4


def test_recall_scores_without_relevance_when_the_graph_cannot_say():
    hit = Candidate(from_payload({"content": "a"}, "m1"), "vector", "qdrant")
    graph = RelevanceGraph({}, fail=True)
    CandidateSources(lambda: graph, lambda: None, lambda: None, lambda: 2).add_relevance([hit])
    assert "relevance_score" not in hit.memory
