"""GET /recall: parse and validate; the engine in pipeline.query decides."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from api.auth import ApiAuth
from api.deps import get_engine, get_services
from api.params import (bool_param, choice, embedding_param, float_param, int_param, list_param, raw,
                        timestamp_param)
from api.responses import ORJSONResponse
from pipeline.errors import ValidationError
from pipeline.graph import TagFilter
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
_OPENAPI = {"parameters": [{"name": name, "in": "query", "required": False, "schema": schema}
                           for name, schema in _PARAMETERS.items()]}


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


def parse_recall(request: Request, services: Services) -> RecallRequest:
    s = services.settings
    if int_param(request, "offset", 0, 0):
        raise ValidationError("offset: ranked recall does not paginate; raise limit instead (or use /memory/by-tag)")
    limit = int_param(request, "limit", s.recall_default_limit, 1, s.recall_max_limit, clamp_high=True)
    start, end = timestamp_param(request, "start"), timestamp_param(request, "end")
    if start and end and start > end:
        raise ValidationError("start: must not be later than end")
    return RecallRequest(
        query=raw(request, "query"),
        queries=tuple(list_param(request, "queries", split_commas=False)),
        embedding=embedding_param(request, services.vector_size),
        limit=limit,
        per_query_limit=int_param(request, "per_query_limit", None, 1, 50, clamp_high=True),
        auto_decompose=bool_param(request, "auto_decompose", False),
        tag_filter=TagFilter(
            tags=tuple(list_param(request, "tags")),
            mode=choice(request, "tag_mode", ("any", "all"), "any"),
            match=choice(request, "tag_match", ("prefix", "exact"), "prefix"),
        ),
        exclude_tags=tuple(list_param(request, "exclude_tags")),
        time_query=raw(request, "time_query"),
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
            context=raw(request, "context"),
            language=raw(request, "language"),
            active_path=raw(request, "active_path"),
            tags=tuple(list_param(request, "context_tags")),
            types=tuple(list_param(request, "context_types")),
            priority_ids=tuple(list_param(request, "priority_ids")),
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
