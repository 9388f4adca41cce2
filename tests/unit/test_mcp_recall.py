"""recall_memory's pure parts: mode routing and validation, views, formats, the budget."""

from __future__ import annotations

import orjson
import pytest

from api.mcp import recall_format as fmt
from api.mcp.recall_args import RANKED_ONLY, RecallMemoryArgs, plan_recall
from api.mcp.tools import RECALL_OUTPUT_SCHEMA, TOOLS
from pipeline.errors import ValidationError


def ranked_result(i: int, content: str = "", **memory) -> dict:
    return {
        "id": f"m{i}",
        "memory": {"content": content or f"memory number {i}", "tags": ["proj", f"t{i}"], "importance": 0.5,
                   "timestamp": "2025-01-15T10:30:00+00:00", "type": "Decision", "confidence": 0.9,
                   "metadata": {"source": "test", "b": 1}, **memory},
        "final_score": 1 / (i + 1),
        "match_type": "vector",
        "score_components": {"vector": 0.5},
        "relations": [],
    }


def ranked_body(results: list[dict], **extra) -> dict:
    return {"status": "success", "results": results, "count": len(results), "query": "q",
            "vector_search": {"enabled": True, "matched": True}, **extra}


def by_tag_body(memories: list[dict], offset=0, limit=20, has_more=False) -> dict:
    return {"status": "success", "tags": ["proj"], "count": len(memories), "limit": limit,
            "offset": offset, "has_more": has_more, "memories": memories}


def listed(i: int, content: str = "") -> dict:
    return {"id": f"m{i}", "content": content or f"listed {i}", "tags": ["proj"], "importance": 0.4,
            "timestamp": "2025-02-01T00:00:00+00:00"}


def size(output: fmt.ToolOutput) -> int:
    return fmt.response_tokens(output)


# --- routing ----------------------------------------------------------------------------

def plan(**kwargs):
    return plan_recall(RecallMemoryArgs.model_validate(kwargs))


def test_memory_id_wins_and_ignores_everything_else():
    p = plan(memory_id="a/b c", query="x", exhaustive=True, offset=5, tag_mode="all")
    assert p.mode == "id_fetch" and p.path == "/memory/a%2Fb%20c" and p.params == ()


def test_enumeration_routes_to_by_tag_with_exact_page_params():
    p = plan(tags=["proj", "ops"], exhaustive=True, limit=50, offset=100, tag_match="exact", tag_mode="any", format="json")
    assert p.mode == "enumeration" and p.path == "/memory/by-tag"
    assert p.params == (("tags", "proj"), ("tags", "ops"), ("limit", "50"), ("offset", "100"))
    assert p.offset == 100
    # limit omitted: the server's default (20) applies
    assert plan(tags=["proj"], exhaustive=True).params == (("tags", "proj"),)


@pytest.mark.parametrize("name", RANKED_ONLY)
def test_enumeration_rejects_every_ranked_only_parameter(name):
    field = RecallMemoryArgs.model_fields[name]
    annotation = str(field.annotation)
    value = {"bool": True, "int": 3, "float": 0.5}.get(next((t for t in ("bool", "int", "float") if t in annotation), ""), None)
    if value is None:
        value = ["x"] if "list" in annotation else "x"
    if name == "embedding":
        value = [0.1, 0.2]
    if name in ("state_mode",):
        value = "history"
    if name == "recency_bias":
        value = "on"
    if name == "sort":
        value = "time_desc"
    with pytest.raises(ValidationError, match=name):
        plan(tags=["proj"], exhaustive=True, **{name: value})


def test_enumeration_rejects_prefix_all_and_missing_tags():
    with pytest.raises(ValidationError, match="prefix"):
        plan(tags=["p"], exhaustive=True, tag_match="prefix")
    with pytest.raises(ValidationError, match="all"):
        plan(tags=["p"], exhaustive=True, tag_mode="all")
    for tags in (None, [], ["  "]):
        with pytest.raises(ValidationError, match="requires non-empty tags"):
            plan(tags=tags, exhaustive=True)


def test_ranked_forwards_arguments_as_rest_parameters():
    p = plan(query="db choice", queries=["a", "b"], tags=["proj"], limit=7, expand_entities=True,
             current_only=False, embedding=[0.5, 1], min_score=0.2, sort="time_desc", format="items", offset=0)
    assert p.mode == "ranked" and p.path == "/recall"
    params = list(p.params)
    assert ("query", "db choice") in params and ("limit", "7") in params
    assert [v for k, v in params if k == "queries"] == ["a", "b"]
    assert ("expand_entities", "true") in params and ("current_only", "false") in params
    assert ("embedding", "0.5,1.0") in params and ("min_score", "0.2") in params
    assert not any(k in ("format", "offset", "exhaustive", "memory_id") for k, _ in params)


def test_ranked_forwards_current_only_only_when_set():
    assert not any(k == "current_only" for k, _ in plan(query="x").params)


def test_ranked_rejects_offset():
    with pytest.raises(ValidationError, match="offset"):
        plan(query="x", offset=10)


def test_schema_constraints_are_enforced():
    from pydantic import ValidationError as PydanticError

    for bad in ({"limit": 0}, {"limit": 201}, {"expansion_limit": 501}, {"relation_limit": 0},
                {"per_query_limit": 51}, {"min_score": 1.5}, {"expand_min_strength": -0.1},
                {"format": "xml"}, {"tag_mode": "some"}, {"offset": -1}, {"unknown": 1}):
        with pytest.raises(PydanticError):
            RecallMemoryArgs.model_validate(bad)


def test_input_schema_matches_the_spec_table():
    tool = next(t for t in TOOLS if t.name == "recall_memory").describe()
    props = tool.input_schema["properties"]
    spec_names = {
        "end", "sort", "tags", "limit", "query", "start", "format", "offset", "context", "queries", "language",
        "tag_mode", "embedding", "memory_id", "min_score", "tag_match", "exhaustive", "state_mode", "time_query",
        "active_path", "state_debug", "context_tags", "current_only", "exclude_tags", "priority_ids",
        "recency_bias", "context_types", "adaptive_floor", "auto_decompose", "relation_limit", "scope_fallback",
        "expand_entities", "expansion_limit", "per_query_limit", "expand_relations", "expand_min_strength",
        "expand_respect_tags", "expand_min_importance",
    }
    assert set(props) == spec_names
    assert tool.input_schema.get("required", []) == []
    assert props["limit"] == {**props["limit"], "type": "integer", "minimum": 1, "maximum": 200}
    assert props["format"]["enum"] == ["text", "items", "detailed", "json"] and props["format"]["default"] == "text"
    assert props["current_only"]["default"] is True and props["state_debug"]["default"] is False
    assert props["sort"]["enum"] == ["score", "time_desc", "time_asc", "updated_desc", "updated_asc"]
    assert props["expansion_limit"]["maximum"] == 500 and props["per_query_limit"]["maximum"] == 50
    assert all("anyOf" not in p and "title" not in p for p in props.values())
    assert tool.annotations.read_only_hint is True and tool.annotations.idempotent_hint is True
    assert tool.output_schema == RECALL_OUTPUT_SCHEMA and RECALL_OUTPUT_SCHEMA["required"] == ["count", "results"]


# --- views ------------------------------------------------------------------------------

def test_compact_view_previews_content_and_keeps_summary():
    long = "x" * 1000
    view = fmt.compact_view(ranked_result(1, content=long, summary="short summary"), detailed=False)
    assert view["memory_id"] == "m1" and view["created_at"] == "2025-01-15T10:30:00+00:00"
    assert view["content"] == "x" * 400 and view["content_truncated"] is True and view["content_chars"] == 1000
    assert view["summary"] == "short summary"
    assert view["final_score"] == 0.5 and view["match_type"] == "vector" and view["relation_count"] == 0
    assert "metadata" not in view and "score_components" not in view and "type" not in view


def test_short_content_is_not_flagged():
    view = fmt.compact_view(ranked_result(1, content="short"), detailed=False)
    assert view["content"] == "short" and "content_truncated" not in view and "content_chars" not in view


def test_detailed_view_adds_type_metadata_keys_and_three_relation_stubs():
    relations = [{"type": "RELATES_TO", "strength": 0.8, "from": "m1", "kind": "relation",
                  "memory": {"id": f"r{i}", "content": "y" * 300}} for i in range(5)]
    view = fmt.compact_view(ranked_result(1, relations=None) | {"relations": relations}, detailed=True)
    assert view["type"] == "Decision" and view["confidence"] == 0.9
    assert view["metadata_keys"] == ["b", "source"] and view["relation_count"] == 5
    assert len(view["relations"]) == 3
    stub = view["relations"][0]
    assert stub == {"id": "r0", "from": "m1", "type": "RELATES_TO", "strength": 0.8, "kind": "relation", "summary": "y" * 100}


def test_raw_view_passes_everything_through_with_state_fields():
    result = ranked_result(1, content="z" * 1000, t_valid="2025-01-01T00:00:00+00:00")
    view = fmt.raw_view(result)
    assert view["content"] == "z" * 1000 and view["metadata"] == {"source": "test", "b": 1}
    assert view["t_valid"] == "2025-01-01T00:00:00+00:00" and view["t_invalid"] is None and view["archived"] is None
    assert view["score_components"] == {"vector": 0.5} and view["memory_id"] == "m1"
    assert "timestamp" not in view and view["created_at"] == "2025-01-15T10:30:00+00:00"


# --- formats ----------------------------------------------------------------------------

def test_text_format_numbered_items_with_stats_line():
    body = ranked_body([ranked_result(0), ranked_result(1)], dedup_removed=3,
                       entity_expansion={"enabled": True, "expanded_count": 5, "entities_found": ["rachel", "platform team"]},
                       expansion={"enabled": True, "expanded_count": 2})
    out = fmt.present_ranked(body, "text", 18_000)
    assert len(out.texts) == 1
    text = out.texts[0]
    assert text.startswith("Found 2 memories for 'q':")
    assert "(3 duplicates removed; 5 via entity expansion (rachel, platform team); 2 via relation expansion)" in text
    assert "1. memory number 0 [proj, t0] (importance: 0.5) score=1.000 [vector] relations=0\n   ID: m0\n   Created: 2025-01-15T10:30:00+00:00" in text
    assert "2. memory number 1" in text
    assert out.structured["mode"] == "ranked" and out.structured["count"] == 2
    assert out.structured["vector_search"] == {"enabled": True, "matched": True}
    assert "status" not in out.structured and "truncation" not in out.structured


def test_null_diagnostics_are_left_out():
    out = fmt.present_ranked(ranked_body([], query=None, sort="score"), "text", 18_000)
    assert "query" not in out.structured and out.structured["sort"] == "score"


def test_summary_stands_in_only_when_content_is_empty():
    out = fmt.present_ranked(ranked_body([ranked_result(0, content=" ", summary="the gist")]), "text", 18_000)
    assert "1. the gist" in out.texts[0]
    out = fmt.present_ranked(ranked_body([ranked_result(0, content="the content", summary="the gist")]), "text", 18_000)
    assert "1. the content" in out.texts[0] and "Summary: the gist" in out.texts[0]


def test_items_format_one_block_per_memory_then_bracketed_notes():
    out = fmt.present_ranked(ranked_body([ranked_result(i) for i in range(3)]), "items", 18_000)
    assert len(out.texts) == 3 and out.texts[0].startswith("1. memory number 0")
    long = fmt.present_ranked(ranked_body([ranked_result(0, content="w" * 900)]), "items", 18_000)
    assert len(long.texts) == 2 and long.texts[1].startswith("[") and long.texts[1].endswith("]")
    assert "400 characters" in long.texts[1]
    empty = fmt.present_ranked(ranked_body([]), "items", 18_000)
    assert empty.texts == ["[no memories found]"] and empty.structured["count"] == 0


def test_detailed_format_shows_type_metadata_and_relations():
    result = ranked_result(0) | {"relations": [{"type": "LEADS_TO", "strength": 0.7, "memory": {"id": "r1", "content": "next step"}}]}
    text = fmt.present_ranked(ranked_body([result]), "detailed", 18_000).texts[0]
    assert "Type: Decision (confidence: 0.90)" in text and "Metadata keys: b, source" in text
    assert "→ LEADS_TO (0.7) r1: next step" in text


def test_json_format_text_is_the_structured_content():
    out = fmt.present_ranked(ranked_body([ranked_result(0, content="q" * 900)]), "json", 18_000)
    assert orjson.loads(out.texts[0]) == out.structured
    assert out.structured["results"][0]["content"] == "q" * 900


def test_id_fetch_is_never_truncated():
    body = {"status": "success", "memory": {"id": "m9", "content": "c" * 100_000, "tags": [], "timestamp": "2025-01-01T00:00:00+00:00"}}
    out = fmt.present_id_fetch(body, "text")
    assert out.structured["mode"] == "id_fetch" and out.structured["count"] == 1
    view = out.structured["results"][0]
    assert view["content"] == "c" * 100_000 and view["archived"] is None and "t_invalid" in view
    assert "c" * 100_000 in out.texts[0]


def test_id_fetch_of_a_pending_memory_says_so():
    body = {"status": "pending", "memory_id": "m1", "state": "queued", "memory": {"content": "soon"}}
    out = fmt.present_id_fetch(body, "json")
    assert out.structured["results"][0]["memory_id"] == "m1" and out.structured["results"][0]["pending"] is True


# --- budget -----------------------------------------------------------------------------

@pytest.mark.parametrize("style", ["text", "items", "detailed", "json"])
def test_budget_bounds_the_whole_response_and_cuts_from_the_end(style):
    results = [ranked_result(i, content=f"result {i} " + "lorem ipsum " * 30) for i in range(40)]
    whole = fmt.present_ranked(ranked_body(results), style, 1_000_000)
    assert whole.structured["count"] == 40
    budget = size(whole) // 3
    out = fmt.present_ranked(ranked_body(results), style, budget)
    assert size(out) <= budget
    kept = out.structured["count"]
    assert 0 < kept < 40
    assert [r["memory_id"] for r in out.structured["results"]] == [f"m{i}" for i in range(kept)]
    cut = out.structured["truncation"]
    assert cut == {"applied": True, "omitted_results": 40 - kept, "reason": "token_budget"}
    # maximal: one more result would not have fitted
    bigger = fmt.present_ranked(ranked_body(results[: kept + 1]), style, budget)
    assert bigger.structured["count"] == kept


def test_budget_notes_the_cut_in_the_text_channel():
    results = [ranked_result(i, content="lorem " * 60) for i in range(30)]
    out = fmt.present_ranked(ranked_body(results), "text", 2_000)
    assert f"{30 - out.structured['count']} more result(s) omitted to fit the response budget of 2000 tokens" in out.texts[0]


def test_enumeration_page_cut_by_budget_still_pages_on():
    memories = [listed(i, content="lorem ipsum " * 30) for i in range(50)]
    body = by_tag_body(memories, offset=100, limit=50, has_more=True)
    whole = fmt.present_enumeration(body, 100, "text", 1_000_000)
    assert whole.structured["has_more"] is True and whole.structured["next_offset"] == 150
    out = fmt.present_enumeration(body, 100, "text", size(whole) // 2)
    kept = out.structured["count"]
    assert 0 < kept < 50
    assert out.structured["limit"] == kept and out.structured["offset"] == 100
    assert out.structured["has_more"] is True and out.structured["next_offset"] == 100 + kept
    assert f"next page: offset={100 + kept}" in out.texts[0]


def test_last_page_that_fits_has_no_more():
    out = fmt.present_enumeration(by_tag_body([listed(1), listed(2)], offset=40, has_more=False), 40, "items", 18_000)
    assert out.structured["has_more"] is False and "next_offset" not in out.structured
    assert out.structured["count"] == 2 and out.structured["mode"] == "enumeration"


def test_enumeration_record_too_large_for_the_budget_is_an_error():
    body = by_tag_body([listed(0, content="h" * 20_000)], offset=7)
    # json shows it compact when it cannot fit whole...
    compact = fmt.present_enumeration(body, 7, "json", 1_000)
    assert compact.structured["count"] == 1 and compact.structured["truncation"]["compacted_results"] == 1
    # ...and errors (rather than an empty page) when not even that fits
    with pytest.raises(fmt.BudgetExceeded, match="offset 7"):
        fmt.present_enumeration(body, 7, "json", 300)
    # a budgeted format previews it at 400 characters
    assert fmt.present_enumeration(body, 7, "text", 1_000).structured["count"] == 1


def test_json_result_too_big_whole_is_shown_compact():
    results = [ranked_result(0, content="small"), ranked_result(1, content="b" * 12_000), ranked_result(2, content="small")]
    out = fmt.present_ranked(ranked_body(results), "json", 2_500)
    assert size(out) <= 2_500
    views = out.structured["results"]
    assert views[0]["content"] == "small" and "score_components" in views[0]
    assert views[1]["content_truncated"] is True and len(views[1]["content"]) == 400
    assert out.structured["truncation"]["compacted_results"] >= 1


def test_diagnostics_dropped_only_when_they_do_not_fit_without_results():
    body = ranked_body([ranked_result(0)], state_filter={"suppressed": ["x" * 20] * 200}, tag_scope={"filtered": True})
    out = fmt.present_ranked(body, "text", 900)
    assert size(out) <= 900
    assert "state_filter" not in out.structured
    assert out.structured["truncation"]["omitted_fields"] == ["state_filter"]
    assert out.structured["tag_scope"] == {"filtered": True} and out.structured["count"] == 1


def test_budget_too_small_for_anything_is_an_error():
    with pytest.raises(fmt.BudgetExceeded):
        fmt.present_ranked(ranked_body([ranked_result(0)]), "text", 5)
