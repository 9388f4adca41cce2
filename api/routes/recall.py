"""GET /recall: parse and validate; the engine in pipeline.query decides."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import ORJSONResponse

from api.auth import ApiAuth
from api.deps import get_engine, get_services
from api.params import (bool_param, choice, embedding_param, float_param, int_param, list_param, raw,
                        timestamp_param)
from pipeline.errors import ValidationError
from pipeline.graph import TagFilter
from pipeline.query import ContextHints, ExpansionOptions, RecallEngine, RecallRequest
from pipeline.query.request import RECENCY_BIAS_MODES, SORTS, STATE_MODES
from pipeline.services import Services

router = APIRouter(dependencies=[ApiAuth], tags=["recall"])


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


@router.get("/recall", summary="Hybrid recall: vector + keyword candidates, scored as AutoMem scores them")
def recall(
    request: Request,
    services: Annotated[Services, Depends(get_services)],
    engine: Annotated[RecallEngine, Depends(get_engine)],
):
    return ORJSONResponse(engine.recall(parse_recall(request, services)))
