"""Read endpoints beside ranked recall: /memory/by-tag, /memories/{id}/related, /startup-recall, /analyze.

Registered before the /memory/{id} routes so that ``by-tag`` is never taken for an id.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from api.auth import ApiAuth
from api.deps import get_services, graph_call
from api.params import choice, int_param, list_param
from api.responses import ORJSONResponse
from pipeline.errors import ValidationError
from pipeline.query import browse
from pipeline.services import Services

router = APIRouter(dependencies=[ApiAuth], tags=["recall"])
ENUMERATION_MAX = 200


@router.get("/memory/by-tag", summary="Every memory carrying any of the tags (exact, case-insensitive), paginated")
def memories_by_tag(request: Request, services: Annotated[Services, Depends(get_services)]):
    settings = services.settings
    tags = list_param(request, "tags", max_items=settings.recall_max_list_items, max_item_chars=settings.max_tag_length)
    if not tags:
        raise ValidationError("tags: at least one tag is required")
    choice(request, "tag_match", ("exact",), "exact")  # enumeration is exact and any-of only
    choice(request, "tag_mode", ("any",), "any")
    limit = int_param(request, "limit", 20, 1, ENUMERATION_MAX, clamp_high=True)
    offset = int_param(request, "offset", 0, 0)
    body = graph_call(lambda: browse.by_tag(services.graph, tags, limit, offset, services.settings.excluded_types))
    return ORJSONResponse(body)


@router.get("/startup-recall", summary="Critical lessons and system rules for the start of a session")
def startup_recall(request: Request, services: Annotated[Services, Depends(get_services)]):
    limit = int_param(request, "limit", 10, 1, 50, clamp_high=True)
    return ORJSONResponse(graph_call(lambda: browse.startup_recall(services.graph, services.settings.excluded_types, limit)))


@router.get("/analyze", summary="Analytics over all memories: types, preferences, time, entities, confidence")
def analyze(services: Annotated[Services, Depends(get_services)]):
    return ORJSONResponse(graph_call(lambda: browse.analyze(services.graph, services.settings.excluded_types)))
