"""The /recall contract over the real stack: filters, lifecycle, ranking controls, context, graph."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import pytest

from tests.graph_helpers import link
from ops.bench.stack import wait_until

pytestmark = pytest.mark.integration


def scope() -> str:
    return f"r-{uuid.uuid4().hex[:10]}"


def ago(**delta) -> str:
    return (datetime.now(timezone.utc) - timedelta(**delta)).isoformat()


def store(api, content: str, tags: list[str], **fields) -> str:
    response = api.post("/memory", json={"content": content, "tags": tags, **fields})
    assert response.status_code == 201, response.text
    return response.json()["memory_id"]


def recall(api, **params) -> dict:
    response = api.get("/recall", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def ids(body: dict) -> list[str]:
    return [r["id"] for r in body["results"]]


def error(api, **params) -> str:
    response = api.get("/recall", params=params)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["status"] == "error" and body["code"] == 400
    return body["message"]


# --- validation -----------------------------------------------------------------------
@pytest.mark.parametrize("params, names", [
    ({"state_mode": "past"}, "state_mode"),
    ({"state_mode": "past", "current_only": "true"}, "state_mode"),
    ({"start": "yesterday-ish"}, "start"),
    ({"end": "2025-13-45"}, "end"),
    ({"start": "2025-02-01T00:00:00Z", "end": "2025-01-01T00:00:00Z"}, "start"),
    ({"embedding": "0.1,0.2"}, "embedding"),
    ({"offset": "3"}, "offset"),
    ({"limit": "0"}, "limit"),
    ({"sort": "random"}, "sort"),
    ({"recency_bias": "sometimes"}, "recency_bias"),
    ({"tag_mode": "some"}, "tag_mode"),
    ({"expand_relations": "maybe"}, "expand_relations"),
    ({"relation_limit": "0"}, "relation_limit"),
    ({"expansion_limit": "501"}, "expansion_limit"),
    ({"expand_min_strength": "1.5"}, "expand_min_strength"),
    ({"min_score": "-1"}, "min_score"),
])
def test_bad_parameters_answer_400_naming_the_parameter(api, params, names):
    assert names in error(api, query="x", **params)


def test_limit_is_clamped_and_unknown_time_query_ignored(api):
    tag = scope()
    store(api, "clamp test memory", [tag])
    body = recall(api, query="clamp test", tags=tag, limit=100000, time_query="when pigs fly")
    assert ids(body) and "time_window" not in body


# --- filters ----------------------------------------------------------------------------
def test_exclude_tags_exact_prefix_comma_and_repeated(api):
    tag = scope()
    keep = store(api, "deploy notes kept", [tag, "keep"])
    draft = store(api, "deploy notes draft", [tag, f"{tag}-temp:draft"])
    conv = store(api, "deploy notes conversation", [tag, "conversation_5"])
    assert set(ids(recall(api, query="deploy notes", tags=tag, limit=10))) == {keep, draft, conv}
    body = recall(api, query="deploy notes", tags=tag, limit=10, exclude_tags=f"{tag}-temp,conversation_5")
    assert ids(body) == [keep] and body["exclude_tags"] == [f"{tag}-temp", "conversation_5"]
    repeated = api.get("/recall", params=[("query", "deploy notes"), ("tags", tag), ("exclude_tags", f"{tag}-temp"),
                                          ("exclude_tags", "conversation_5")]).json()
    assert ids(repeated) == [keep]
    # exclusion also holds for trending (no query)
    assert ids(recall(api, tags=tag, exclude_tags=f"{tag}-temp,conversation_5")) == [keep]


def test_time_query_and_explicit_window(api):
    tag = scope()
    old = store(api, "release retrospective old", [tag], timestamp=ago(days=40))
    recent = store(api, "release retrospective recent", [tag], timestamp=ago(days=3))
    yesterday = store(api, "release retrospective yesterday", [tag],
                      timestamp=(datetime.now(timezone.utc).replace(hour=12, minute=0) - timedelta(days=1)).isoformat())
    week = recall(api, query="release retrospective", tags=tag, time_query="last week", limit=10)
    assert set(ids(week)) == {recent, yesterday} and week["time_window"]["start"]
    assert ids(recall(api, query="release retrospective", tags=tag, time_query="yesterday")) == [yesterday]
    assert set(ids(recall(api, query="release retrospective", tags=tag, time_query="last 60 days", limit=10))) == {old, recent, yesterday}
    window = recall(api, tags=tag, start=ago(days=50), end=ago(days=20))
    assert ids(window) == [old]
    # a time window without a query lists newest first
    timeline = recall(api, tags=tag, time_query="last 60 days", limit=10)
    assert timeline["sort"] == "time_desc" and ids(timeline) == [yesterday, recent, old]
    assert ids(recall(api, tags=tag, sort="time_asc", limit=10)) == [old, recent, yesterday]


# --- lifecycle ----------------------------------------------------------------------------
def test_expired_and_future_memories_hidden_unless_history(api):
    tag = scope()
    live = store(api, "office wifi password rotation", [tag])
    expired = store(api, "office wifi password rotation expired", [tag], t_invalid=ago(days=1))
    future = store(api, "office wifi password rotation future", [tag], t_valid=ago(days=-5))
    current = recall(api, query="office wifi password", tags=tag, limit=10, state_debug="true")
    assert ids(current) == [live]
    reasons = {s["id"]: s["reason"] for s in current["state_filter"]["suppressed"]}
    assert reasons == {expired: "expired", future: "not_yet_valid"}
    history = recall(api, query="office wifi password", tags=tag, limit=10, state_mode="history")
    assert set(ids(history)) == {live, expired, future} and "state_filter" not in history
    legacy = recall(api, query="office wifi password", tags=tag, limit=10, state_mode="current", current_only="false")
    assert legacy["state_mode"] == "history" and len(ids(legacy)) == 3


def test_supersession_chain_resolves_to_head_with_provenance(api, stack):
    tag = scope()
    a = store(api, "the primary database is MySQL", [tag, f"{tag}-v1"])
    b = store(api, "moved the primary database onto Postgres 14", [f"{tag}-v2"])
    c = store(api, "upgraded the primary store onto Postgres 16", [f"{tag}-v3"])
    link(stack, a, b, "INVALIDATED_BY")
    link(stack, b, c, "EVOLVED_INTO")
    body = recall(api, query="primary database MySQL", tags=f"{tag}-v1", state_debug="true")
    assert ids(body) == [c]
    head = body["results"][0]
    assert head["match_type"] == "state_replacement" and head["state_replaces"] == a
    assert head["relations"][0]["from"] == a
    assert body["state_filter"]["replacement_count"] == 1
    assert body["state_filter"]["suppressed"][0]["chain"] == [a, b, c]
    assert ids(recall(api, query="primary database MySQL", tags=f"{tag}-v1", state_mode="history")) == [a]


def test_supersession_cycle_is_safe(api, stack):
    tag = scope()
    a = store(api, "cycle memory alpha", [tag])
    b = store(api, "cycle memory beta", [f"{tag}-b"])
    link(stack, a, b, "EVOLVED_INTO")
    link(stack, b, a, "EVOLVED_INTO")
    body = recall(api, query="cycle memory alpha", tags=tag)
    assert ids(body) == [b]  # a → b → (a: cycle closes) — b is the head reached


def test_state_debug_reports_contradictions_without_suppressing(api, stack):
    tag = scope()
    a = store(api, "the deploy window is friday evening", [tag])
    b = store(api, "the deploy window is monday morning", [tag])
    stale = store(api, "the deploy window is sunday night", [f"{tag}-old"], t_invalid=ago(days=2))
    link(stack, a, b, "CONTRADICTS", strength=0.9)
    link(stack, stale, a, "CONTRADICTS")
    body = recall(api, query="deploy window", tags=tag, limit=5, state_debug="true")
    assert set(ids(body)) == {a, b}  # a contradiction hides neither side
    state = body["state_filter"]
    assert state["contradiction_count"] == 2
    by_other = {c["contradicts"]: c for c in state["contradictions"]}
    pair = by_other[b] if b in by_other else by_other[a]
    assert pair["other_returned"] is True and pair["strength"] == 0.9
    assert {pair["id"], pair["contradicts"]} == {a, b}
    assert by_other[stale] == {"id": a, "contradicts": stale, "direction": "incoming", "strength": 0.8,
                               "other_returned": False}
    plain = recall(api, query="deploy window", tags=tag, limit=5)
    assert "contradictions" not in plain["state_filter"] and "contradiction_count" not in plain["state_filter"]
    assert "state_filter" not in recall(api, query="deploy window", tags=tag, state_mode="history", state_debug="true")


# --- ranking controls --------------------------------------------------------------------
def test_recency_bias_on_reranks_and_echoes(api):
    tag = scope()
    store(api, "standup schedule moved", [tag], timestamp=ago(days=30), importance=0.9)
    store(api, "standup schedule moved again", [tag], timestamp=ago(days=1), importance=0.3)
    plain = recall(api, query="standup schedule", tags=tag)
    assert "recency_bias" not in plain and "temporal" not in plain["results"][0]["score_components"]
    biased = recall(api, query="standup schedule", tags=tag, recency_bias="on")
    assert biased["recency_bias"] == "on"
    newest = next(r for r in biased["results"] if r["memory"]["content"].endswith("again"))
    assert newest["score_components"]["temporal"] == 1.0
    assert recall(api, query="latest standup schedule", tags=tag, recency_bias="auto")["recency_bias"] == "on"


def test_when_question_lifts_the_memory_that_states_a_time(api):
    """SEARCH_WEIGHT_TIME_MENTION (default 0.1): a when-question gives ``time_mention`` to every
    candidate, 1.0 where the content states a time; other questions leave the key out."""
    tag = scope()
    dated = store(api, "Caroline went to the pottery class yesterday", [tag])
    undated = store(api, "Caroline went to the pottery class", [tag])
    body = recall(api, query="When did Caroline go to the pottery class?", tags=tag)
    by_id = {r["id"]: r for r in body["results"]}
    assert by_id[dated]["score_components"]["time_mention"] == 1.0
    assert by_id[undated]["score_components"]["time_mention"] == 0.0
    assert ids(body)[0] == dated
    plain = recall(api, query="Did Caroline go to the pottery class?", tags=tag)
    assert all("time_mention" not in r["score_components"] for r in plain["results"])


def test_min_score_and_score_filter(api):
    tag = scope()
    store(api, "quarterly budget review", [tag])
    body = recall(api, query="quarterly budget", tags=tag, min_score=5)
    assert body["count"] == 0 and body["score_filter"]["filtered_count"] >= 1


def test_scope_fallback_fills_outside_scope(api):
    tag, other = scope(), scope()
    inside = store(api, "kubernetes ingress timeout fix", [tag])
    outside = store(api, "kubernetes ingress timeout notes", [other])
    scoped = recall(api, query="kubernetes ingress timeout", tags=tag, limit=3)
    assert ids(scoped) == [inside] and "scope_fallback" not in scoped
    body = recall(api, query="kubernetes ingress timeout", tags=tag, limit=3, scope_fallback="true")
    assert body["scope_fallback"] is True and ids(body)[0] == inside
    fills = [r for r in body["results"] if r.get("outside_tag_scope")]
    assert outside in [r["id"] for r in fills] and all(r["id"] != inside for r in fills)


# --- context ------------------------------------------------------------------------------
def test_context_hints_and_priority_ids(api):
    tag = scope()
    plain = store(api, "error handling guideline for services", [tag], type="Pattern", importance=0.9)
    style = store(api, "error handling style in python code", [tag, "python"], type="Style", importance=0.2)
    unrelated = store(api, "lunch menu for friday", [tag], importance=0.1)
    body = recall(api, query="error handling", tags=tag, active_path="src/app/main.py", limit=2)
    assert ids(body)[0] == style
    assert body["results"][0]["score_components"]["context"] > 0
    assert body["context_priority"]["language"] == "python" and "style" in body["context_priority"]["context_types"]
    # priority_ids: fetched although the search missed it, placed first, +0.9
    prio = recall(api, query="error handling", tags=tag, priority_ids=unrelated, limit=3)
    assert ids(prio)[0] == unrelated and prio["results"][0]["score_components"]["context"] >= 0.9
    # ...but never past the filters
    assert unrelated not in ids(recall(api, query="error handling", tags=f"{tag}-none", priority_ids=unrelated))
    assert plain in ids(recall(api, query="error handling", tags=tag, limit=3))


# --- many queries -------------------------------------------------------------------------
def test_queries_dedup_and_auto_decompose(api):
    tag = scope()
    a = store(api, "Rachel works as a nurse at the hospital", [tag])
    b = store(api, "Rachel likes hiking on weekends", [tag])
    body = api.get("/recall", params=[("queries", "Rachel nurse"), ("queries", "Rachel hiking"), ("tags", tag),
                                      ("limit", "5")]).json()
    assert set(ids(body)) == {a, b} and body["dedup_removed"] >= 1 and body["queries"] == ["Rachel nurse", "Rachel hiking"]
    decomposed = recall(api, query="What does Rachel do for work?", tags=tag, auto_decompose="true")
    assert decomposed["queries"][0] == "What does Rachel do for work?" and "Rachel" in decomposed["queries"]


def test_auto_decompose_name_only_sub_query_does_not_flood(api):
    """auto_decompose searches "Caroline" alone too; scored on its own that sub-query gives every
    Caroline turn exact + tag + keyword. Explicit ``queries[]`` keep the spec's best-score merge
    (and flood); auto_decompose widens the question's pool and ranks it by the question."""
    tag = scope()
    question = "What did the adoption agency tell Caroline?"
    evidence = store(api, "Melanie: Caroline said the adoption agency approved her application", [tag, "melanie"],
                     metadata={"speaker": "Melanie"})
    chatter = {store(api, f"Caroline: {line}", [tag, "caroline"], metadata={"speaker": "Caroline"})
               for line in ("good morning", "the weather is lovely", "I had pasta for lunch", "see you soon",
                            "my cat is asleep", "I like blue", "traffic was slow", "nice shoes")}
    plain = recall(api, query=question, tags=tag, limit=3)
    assert ids(plain)[0] == evidence
    flooded = api.get("/recall", params=[("queries", question), ("queries", "Caroline"), ("tags", tag),
                                         ("limit", "3")]).json()
    assert set(ids(flooded)) <= chatter  # the failure mode, kept for explicit queries[] as the spec says
    decomposed = recall(api, query=question, tags=tag, limit=3, auto_decompose="true")
    assert ids(decomposed) == ids(plain)  # same order as the question alone: no sub-query flood
    assert decomposed["queries"][:2] == [question, "Caroline"]  # the contract's fields stay
    assert decomposed["dedup_removed"] >= 1  # the sub-queries found the question's candidates again


# --- graph expansion ----------------------------------------------------------------------
def test_expand_relations_thresholds_and_hydration(api, stack):
    tag = scope()
    seed = store(api, "chose redis streams for the event bus", [tag])
    strong = store(api, "event bus consumer groups design", [f"{tag}-x"], importance=0.8)
    weak = store(api, "unrelated weakly linked note", [f"{tag}-x"], importance=0.8)
    minor = store(api, "low importance linked note", [f"{tag}-x"], importance=0.1)
    similar = store(api, "similar but system generated", [f"{tag}-x"], importance=0.9)
    link(stack, seed, strong, "RELATES_TO", 0.9)
    link(stack, weak, seed, "LEADS_TO", 0.1)
    link(stack, seed, minor, "PART_OF", 0.9)
    link(stack, seed, similar, "SIMILAR_TO", 0.99)
    plain = recall(api, query="redis streams event bus", tags=tag, limit=1)
    assert ids(plain) == [seed] and "expansion" not in plain
    assert {r["id"] for r in plain["results"][0]["relations"]} == {strong, weak, minor}  # hydrated, SIMILAR_TO not
    body = recall(api, query="redis streams event bus", tags=tag, limit=1, expand_relations="true",
                  expand_min_strength=0.5, expand_min_importance=0.5)
    assert ids(body) == [seed, strong]
    assert body["results"][1]["match_type"] == "relation" and body["results"][1]["expanded_from"] == seed
    assert body["results"][1]["score_components"]["relation"] == 0.9
    assert body["expansion"] == {"enabled": True, "seed_count": 1, "expanded_count": 1, "relation_limit": 5,
                                 "expansion_limit": 25, "respect_tags": False}
    everything = recall(api, query="redis streams event bus", tags=tag, limit=1, expand_relations="true")
    assert set(ids(everything)[1:]) == {strong, weak, minor}
    assert recall(api, query="redis streams event bus", tags=tag, limit=1, expand_relations="true",
                  expand_respect_tags="true")["expansion"]["expanded_count"] == 0
    assert len(ids(recall(api, query="redis streams event bus", tags=tag, limit=1, expand_relations="true",
                          expansion_limit=1))) == 2


def test_expand_entities(api):
    tag = scope()
    seed = store(api, "Sarah's sister is Rachel", [tag, "entity:people:rachel"],
                 metadata={"entities": {"people": ["Rachel", "Sarah"]}})
    job = store(api, "She works as a veterinary surgeon", [f"{tag}-other", "entity:people:rachel"])
    body = recall(api, query="Sarah sister", tags=tag, limit=1, expand_entities="true")
    assert ids(body)[0] == seed and job in ids(body)
    expanded = next(r for r in body["results"] if r["id"] == job)
    assert expanded["match_type"] == "entity_expansion" and expanded["expanded_from_entity"] == "rachel"
    assert expanded["score_components"]["entity_expansion"] == 0.15
    assert body["entity_expansion"]["enabled"] is True and "rachel" in body["entity_expansion"]["entities_found"]
    assert "sarah" in body["entity_expansion"]["entities_found"]


def test_entities_and_jit_enriched_count_diagnostics(api):
    tag = scope()
    seed = store(api, "Rachel joined the platform team in March", [tag, "entity:people:rachel", "entity:orgs:platform-team"],
                 metadata={"entities": {"people": ["Rachel"]}})
    body = recall(api, query="what team did Rachel join", tags=tag)
    assert body["jit_enriched_count"] == 0  # enrichment is the actors' job, never inline
    assert body["entities"] == [{"name": "rachel", "type": "people", "tag": "entity:people:rachel", "result_ids": [seed]}]
    both = recall(api, query="Rachel platform team", tags=tag, state_mode="history")
    assert [e["tag"] for e in both["entities"]] == ["entity:people:rachel", "entity:orgs:platform-team"]
    assert both["jit_enriched_count"] == 0
    assert recall(api, query="when did she join", tags=tag)["entities"] == []


# --- side effects ---------------------------------------------------------------------------
def test_last_accessed_updated_for_seeds_through_the_queue(api):
    tag = scope()
    memory_id = store(api, "access tracking target", [tag])
    assert "last_accessed" not in api.get(f"/memory/{memory_id}").json()["memory"]
    recall(api, query="access tracking target", tags=tag)
    wait_until(lambda: api.get(f"/memory/{memory_id}").json()["memory"].get("last_accessed"), message="last_accessed")


# --- score components -----------------------------------------------------------------------
def test_result_shape(api):
    tag = scope()
    store(api, "shape of a result", [tag], metadata={"project": "shapes"})
    result = recall(api, query="shape result", tags=tag)["results"][0]
    assert set(result["score_components"]) >= {"vector", "keyword", "metadata", "relation", "tag", "importance",
                                               "confidence", "recency", "exact", "relevance", "context", "evidence",
                                               "relevance_gated"}
    assert {"source", "match_score", "original_score", "score", "_query"} <= set(result)
    assert "tags_lower" not in result["memory"] and "memory_id" not in result["memory"]
    sidecar = recall(api, query="shapes", tags=tag)["results"][0]
    assert sidecar["score_components"]["metadata"] == 1.0 and sidecar["score_components"]["exact"] == 1.0


def _recall_past_the_vector_pool(api, **params):
    """Twelve fillers and one target only full-text search can reach: the query vector points at
    the fillers, so the vector search (limit 1 → 4 in a tag scope, 8 in the automem profile) never
    sees the target."""
    from pipeline.embedding import HashEmbedder

    tag = scope()
    for n in range(12):
        store(api, f"filler note {n} about gardening and the weather", [tag])
    target = store(api, "zebrafish tank: a weather note", [tag])
    vector = HashEmbedder().embed(["filler note about gardening and the weather"])[0]
    body = recall(api, query="zebrafish", tags=tag, limit=1, embedding=",".join(map(str, vector)), **params)
    return target, vector, body


@pytest.mark.parametrize("source", ["auto", "graph"])
def test_keyword_only_candidate_carries_its_cosine_and_outranks_vector_neighbours(servers, source):
    """RECALL_KEYWORD_SEARCH=always: a memory the vector search does not reach still enters through
    keyword search (auto: the Edge shard's BM25 text index; graph: FalkorDB's full-text index),
    with the cosine a vector hit would have had, and, at the spec's keyword weight (the automem
    profile), its rare matching word (BM25) puts it first."""
    from pipeline.embedding import HashEmbedder
    from ops.bench.stack import Stack

    stack = Stack.create(servers, recall_profile="automem", recall_keyword_search="always",
                         search_weight_lexical="0.1", recall_keyword_source=source)
    try:
        stack.start_web()
        stack.start_worker(processes=1, threads=2)
        with stack.client() as api:
            target, vector, body = _recall_past_the_vector_pool(api)
            assert ids(body) == [target]
    finally:
        stack.stop()
    result = body["results"][0]
    assert result["match_type"] == "keyword" and result["source"] == {"auto": "qdrant", "graph": "graph"}[source]
    stored = HashEmbedder().embed(["zebrafish tank: a weather note"])[0]
    cosine = sum(a * b for a, b in zip(vector, stored))
    assert result["score_components"]["vector"] == pytest.approx(max(0.0, min(1.0, cosine)), abs=1e-4)


def test_automem_profile_keyword_search_only_fills(servers):
    """RECALL_PROFILE=automem (the spec's sequential search): with the vector pool full, full text
    adds nothing; even newest first, the target (stored last) is not in the pool."""
    from ops.bench.stack import Stack

    stack = Stack.create(servers, recall_profile="automem")
    try:
        stack.start_web()
        stack.start_worker(processes=1, threads=2)
        with stack.client() as api:
            target, _vector, body = _recall_past_the_vector_pool(api, sort="time_desc")
    finally:
        stack.stop()
    assert ids(body) != [target] and body["results"][0]["match_type"] != "keyword"


def test_default_keyword_search_admits_what_vector_search_missed(api):
    """The default (tuned) profile searches full text on every text query: the target the vector
    pool never reaches is in the pool, so newest first (it was stored last) it is the answer."""
    target, _vector, body = _recall_past_the_vector_pool(api, sort="time_desc")
    assert ids(body) == [target] and body["results"][0]["match_type"] == "keyword"


# --- neighbouring turns (issue 7) -------------------------------------------------------------
def test_turn_two_after_the_best_hit_is_lifted_by_the_far_share(servers):
    """SEARCH_WEIGHT_NEIGHBOUR_FAR alone: the turn two steps after the best hit (the other
    speaker's reply in between) gains that share of the best hit's score, read over two
    PRECEDED_BY edges in the real graph; the turns right next to the hit gain nothing from it
    (only from weak turns two steps from them)."""
    import numpy as np

    from pipeline.embedding import HashEmbedder
    from ops.bench.stack import Stack

    query = HashEmbedder().embed(["zebrafish adoption"])[0]
    rng = np.random.default_rng(11)

    def near(similarity: float) -> list[float]:
        noise = rng.normal(size=len(query))
        noise -= (noise @ np.asarray(query)) * np.asarray(query)
        vector = similarity * np.asarray(query) + np.sqrt(1 - similarity**2) * noise / np.linalg.norm(noise)
        return [float(x) for x in vector]

    chat = f"conversation:{uuid.uuid4().hex[:8]}"
    when = datetime(2024, 7, 1, tzinfo=timezone.utc).isoformat()
    turns = [{"content": "How was your week?", "embedding": near(0.0)},
             {"content": "Did you finally go through with the zebrafish adoption?", "embedding": query},
             {"content": "Oh, you remembered!", "embedding": near(0.0)},
             {"content": "Yes, last Sunday. We named him Bubbles.", "embedding": near(0.0)}]
    turns += [{"content": f"filler turn {n} about the weather", "embedding": near(0.3)} for n in range(4)]
    bodies = [{"id": f"{chat}-{n}", "tags": [chat], "timestamp": when, **t} for n, t in enumerate(turns)]
    before, best, reply, answer = (bodies[n]["id"] for n in range(4))

    stack = Stack.create(servers, search_weight_neighbour="0", search_weight_neighbour_far="1.0")
    try:
        stack.start_web()
        stack.start_worker(processes=1, threads=2)
        stack.start_enrich_worker()
        with stack.client() as api:
            assert api.post("/memory/batch", json={"memories": bodies}).status_code == 201
            wait_until(lambda: any(r["direction"] == "outgoing" for r in api.get(
                f"/memories/{answer}/related", params={"relationship_types": "PRECEDED_BY"}).json()["related_memories"]),
                timeout=60, message="answer chained")
            wait_until(lambda: (api.get("/health").json().get("vector_count") or 0) >= len(bodies),
                       timeout=60, message="all indexed")
            body = recall(api, query="zebrafish adoption", tags=chat, limit=8)
    finally:
        stack.stop()
    by_id = {r["id"]: r for r in body["results"]}
    best_before_bonus = by_id[best]["final_score"] - by_id[best]["score_components"].get("neighbour", 0.0)
    assert ids(body)[:2] == [best, answer]
    assert by_id[answer]["score_components"]["neighbour"] == pytest.approx(best_before_bonus, rel=1e-3)
    assert reply in by_id  # the relevance gate may drop the weakest turns; "before" may be one of them
    for adjacent in (before, reply):
        if adjacent in by_id:
            assert by_id[adjacent]["score_components"].get("neighbour", 0.0) < 0.5 * best_before_bonus
