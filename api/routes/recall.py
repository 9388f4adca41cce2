"""GET /recall: parse and validate; the engine in pipeline.query decides."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from api.auth import ApiAuth
from api.deps import get_engine, get_services
from api.params import (bool_param, choice, embedding_param, float_param, int_param, list_param, text_param,
                        timestamp_param)
from api.responses import ORJSONResponse
from pipeline.config import Settings
from pipeline.errors import ValidationError
from pipeline.graph import TagFilter
from pipeline.limits import HINT_MAX_CHARS, TIME_QUERY_MAX_CHARS
from pipeline.query import ContextHints, ExpansionOptions, RecallEngine, RecallRequest
from pipeline.query.request import RECENCY_BIAS_MODES, SORTS, STATE_MODES
from pipeline.services import Services

router = APIRouter(dependencies=[ApiAuth], tags=["recall"])

# Parsing is done by hand (lists as repeats or comma lists, booleans in several spellings,
# errors in the AutoMem envelope); these entries only describe the parameters in OpenAPI.
_STRING, _BOOL, _INT, _NUMBER = {"type": "string"}, {"type": "boolean"}, {"type": "integer"}, {"type": "number"}
_LIST = {"type": "array", "items": {"type": "string"}}
_PARAMETERS = {
    "query": _STRING, "queries": _LIST, "embedding": _STRING, "limit": {"type": "integer", "minimum": 1},
    "per_query_limit": {"type": "integer", "minimum": 1, "maximum": 50}, "auto_decompose": _BOOL,
    "offset": {"type": "integer", "minimum": 0, "maximum": 0},
    "tags": _LIST, "exclude_tags": _LIST, "tag_mode": {"type": "string", "enum": ["any", "all"]},
    "tag_match": {"type": "string", "enum": ["prefix", "exact"]}, "time_query": _STRING,
    "start": {"type": "string", "format": "date-time"}, "end": {"type": "string", "format": "date-time"},
    "sort": {"type": "string", "enum": list(SORTS)}, "order_by": {"type": "string", "enum": list(SORTS)},
    "state_mode": {"type": "string", "enum": list(STATE_MODES)}, "current_only": _BOOL, "state_debug": _BOOL,
    "recency_bias": {"type": "string", "enum": list(RECENCY_BIAS_MODES)}, "scope_fallback": _BOOL,
    "min_score": {"type": "number", "minimum": 0}, "adaptive_floor": _BOOL,
    "expand_relations": _BOOL, "expand_entities": _BOOL,
    "relation_limit": {"type": "integer", "minimum": 1, "maximum": 200},
    "expansion_limit": {"type": "integer", "minimum": 1, "maximum": 500},
    "expand_min_importance": {"type": "number", "minimum": 0, "maximum": 1},
    "expand_min_strength": {"type": "number", "minimum": 0, "maximum": 1}, "expand_respect_tags": _BOOL,
    "context": _STRING, "language": _STRING, "active_path": _STRING, "context_tags": _LIST,
    "context_types": _LIST, "priority_ids": _LIST,
}
_DESCRIPTIONS = {
    "query": "Text to search for: vector similarity plus full-text keyword candidates (its first 32 distinct words "
             "reach the full-text index). Omitted: trending memories (most important first) within the filters. "
             "At most RECALL_MAX_QUERY_CHARS characters (2000).",
    "queries": "Several queries at once (repeat the parameter); results are merged and deduplicated. At most "
               "RECALL_MAX_QUERIES queries (10), each at most RECALL_MAX_QUERY_CHARS characters.",
    "embedding": "A query vector instead of text (comma-separated floats or a JSON array, the collection's size).",
    "limit": "Results to return (default RECALL_DEFAULT_LIMIT, 5; above RECALL_MAX_LIMIT is clamped).",
    "per_query_limit": "With queries: results kept per query before merging (default: limit; at most 50).",
    "auto_decompose": "Also search for the entities and topics extracted from the query (default false).",
    "offset": "Not supported by ranked recall (only 0): raise limit, or page with GET /memory/by-tag.",
    "tags": "Hard scope: only memories carrying these tags (repeat the parameter or comma-separate). At most "
            "RECALL_MAX_LIST_ITEMS tags (100), each at most MAX_TAG_LENGTH characters (256).",
    "exclude_tags": "Drop memories carrying any of these tags, matched exactly or as a prefix. Same limits as tags.",
    "tag_mode": "any (default): at least one of tags; all: every one of them.",
    "tag_match": "prefix (default): a tag matches its segment prefixes (slack matches slack:channel:general); "
                 "exact: whole tags, case-insensitive.",
    "time_query": "Natural time window: today, yesterday, last week, last 30 days, since March, between March and "
                  "May, ... (unknown phrases are ignored). At most 200 characters.",
    "start": "Window start, ISO 8601 (with end, instead of time_query).",
    "end": "Window end, ISO 8601; must not be before start.",
    "sort": "score (default: hybrid relevance, ties newest first), time_desc / time_asc (chronological), "
            "updated_desc / updated_asc (same key).",
    "order_by": "Alias of sort.",
    "state_mode": "current (default): only currently valid memories, supersession chains resolved to their head; "
                  "history: stale and future state too.",
    "current_only": "Legacy form of state_mode (true = current); wins when both are given.",
    "state_debug": "Report suppressed memories and their replacements in state_filter (default false).",
    "recency_bias": "Relative-recency re-rank of score ordering: off, on or auto (default RECALL_RECENCY_BIAS, off).",
    "scope_fallback": "When tag-scoped results fall short of limit, fill from an unscoped vector search "
                      "(appended after the scoped results; default false).",
    "min_score": "Drop results whose final_score is below this (default RECALL_MIN_SCORE, 0 = off).",
    "adaptive_floor": "Drop weak outliers relative to the best result (default RECALL_ADAPTIVE_FLOOR, true).",
    "expand_relations": "Follow graph edges from the seed results to related memories (default false).",
    "expand_entities": "Multi-hop via entities the seed results mention (default false).",
    "relation_limit": "Relations followed per seed (default RECALL_RELATION_LIMIT, 5).",
    "expansion_limit": "Most expanded memories in all (default RECALL_EXPANSION_LIMIT, 25).",
    "expand_min_importance": "Least importance of an expanded memory (0-1); seeds are never filtered.",
    "expand_min_strength": "Least strength of an edge to follow during relation expansion (0-1).",
    "expand_respect_tags": "Keep expanded results inside the tags scope (default false: expansion may leave it).",
    "context": "Context label (e.g. coding-style): boosts memories whose tag or type it names. At most 1024 characters.",
    "language": "Programming language hint (e.g. python): boosts memories in that language. At most 1024 characters.",
    "active_path": "Current file path; its extension sets language when language is not given. At most 1024 characters.",
    "context_tags": "Soft boost for memories carrying these tags (nothing is excluded). Same limits as tags.",
    "context_types": "Soft boost for these memory types (e.g. Style, Preference). Same limits as tags.",
    "priority_ids": "Memory ids to include and boost. At most RECALL_MAX_LIST_ITEMS ids, each at most 1024 characters.",
}
_OPENAPI = {"parameters": [{"name": name, "in": "query", "required": False, "schema": schema,
                            "description": _DESCRIPTIONS[name]} for name, schema in _PARAMETERS.items()]}


def _state_mode(request: Request) -> str:
    """state_mode is validated first; a legacy current_only, when given, then wins."""
    mode = choice(request, "state_mode", STATE_MODES, "current")
    current_only = bool_param(request, "current_only", None)
    if current_only is not None:
        return "current" if current_only else "history"
    return mode


def _sort(request: Request) -> str | None:
    sort = choice(request, "sort", SORTS, None)
    order_by = choice(request, "order_by", SORTS, None)
    return sort or order_by


def _bounded_list(request: Request, name: str, s: Settings, item_chars: int | None = None) -> tuple[str, ...]:
    """Tags, types and ids: at most RECALL_MAX_LIST_ITEMS values, each no longer than a stored tag."""
    return tuple(list_param(request, name, max_items=s.recall_max_list_items,
                            max_item_chars=item_chars or s.max_tag_length))


def parse_recall(request: Request, services: Services) -> RecallRequest:
    s = services.settings
    if int_param(request, "offset", 0, 0):
        raise ValidationError("offset: ranked recall does not paginate; raise limit instead (or use /memory/by-tag)")
    limit = int_param(request, "limit", s.recall_default_limit, 1, s.recall_max_limit, clamp_high=True)
    start, end = timestamp_param(request, "start"), timestamp_param(request, "end")
    if start and end and start > end:
        raise ValidationError("start: must not be later than end")
    return RecallRequest(
        query=text_param(request, "query", s.recall_max_query_chars),
        queries=tuple(list_param(request, "queries", split_commas=False, max_items=s.recall_max_queries,
                                 max_item_chars=s.recall_max_query_chars)),
        embedding=embedding_param(request, services.vector_size),
        limit=limit,
        per_query_limit=int_param(request, "per_query_limit", None, 1, 50, clamp_high=True),
        auto_decompose=bool_param(request, "auto_decompose", False),
        tag_filter=TagFilter(
            tags=_bounded_list(request, "tags", s),
            mode=choice(request, "tag_mode", ("any", "all"), "any"),
            match=choice(request, "tag_match", ("prefix", "exact"), "prefix"),
        ),
        exclude_tags=_bounded_list(request, "exclude_tags", s),
        time_query=text_param(request, "time_query", TIME_QUERY_MAX_CHARS),
        start=start,
        end=end,
        sort=_sort(request),
        state_mode=_state_mode(request),
        state_debug=bool_param(request, "state_debug", False),
        recency_bias=choice(request, "recency_bias", RECENCY_BIAS_MODES, s.recall_recency_bias),
        scope_fallback=bool_param(request, "scope_fallback", False),
        min_score=float_param(request, "min_score", s.recall_min_score, 0.0),
        adaptive_floor=bool_param(request, "adaptive_floor", s.recall_adaptive_floor),
        expansion=ExpansionOptions(
            relations=bool_param(request, "expand_relations", False),
            entities=bool_param(request, "expand_entities", False),
            relation_limit=int_param(request, "relation_limit", s.recall_relation_limit, 1, 200),
            expansion_limit=int_param(request, "expansion_limit", s.recall_expansion_limit, 1, 500),
            min_importance=float_param(request, "expand_min_importance", 0.0, 0.0, 1.0),
            min_strength=float_param(request, "expand_min_strength", 0.0, 0.0, 1.0),
            respect_tags=bool_param(request, "expand_respect_tags", False),
        ),
        context=ContextHints(
            context=text_param(request, "context", HINT_MAX_CHARS),
            language=text_param(request, "language", HINT_MAX_CHARS),
            active_path=text_param(request, "active_path", HINT_MAX_CHARS),
            tags=_bounded_list(request, "context_tags", s),
            types=_bounded_list(request, "context_types", s),
            priority_ids=_bounded_list(request, "priority_ids", s, HINT_MAX_CHARS),
        ),
    )


@router.get("/recall", summary="Hybrid recall: vector + keyword candidates, scored as AutoMem scores them",
            openapi_extra=_OPENAPI)
def recall(
    request: Request,
    services: Annotated[Services, Depends(get_services)],
    engine: Annotated[RecallEngine, Depends(get_engine)],
):
    return ORJSONResponse(engine.recall(parse_recall(request, services)))
