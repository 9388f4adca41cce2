"""GET /recall: parse and validate; the engine in pipeline.query decides."""

from __future__ import annotations

import math
from typing import Annotated

import orjson
from fastapi import APIRouter, Depends, Request
from fastapi.responses import ORJSONResponse

from api.auth import ApiAuth
from api.deps import get_engine, get_services
from pipeline.errors import ValidationError
from pipeline.graph import TagFilter
from pipeline.query import RecallEngine, RecallRequest
from pipeline.services import Services

router = APIRouter(dependencies=[ApiAuth], tags=["recall"])


def list_param(request: Request, name: str) -> list[str]:
    """A list given as repeated parameters, a comma list, or both."""
    values: list[str] = []
    for raw in request.query_params.getlist(name):
        values += [part.strip() for part in raw.split(",") if part.strip()]
    return list(dict.fromkeys(values))


def _choice(request: Request, name: str, allowed: tuple[str, ...], default: str) -> str:
    value = (request.query_params.get(name) or default).strip().lower()
    if value not in allowed:
        raise ValidationError(f"{name}: must be one of {', '.join(allowed)}")
    return value


def _limit(request: Request, default: int, maximum: int) -> int:
    raw = request.query_params.get("limit")
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError("limit: expected an integer") from None
    if value < 1:
        raise ValidationError("limit: must be at least 1")
    return min(value, maximum)  # the spec clamps rather than rejects


def _embedding(request: Request, size: int) -> list[float] | None:
    raw = request.query_params.get("embedding")
    if raw is None or not raw.strip():
        return None
    text = raw.strip()
    try:
        values = orjson.loads(text) if text.startswith("[") else [float(x) for x in text.split(",")]
        vector = [float(x) for x in values]
    except (ValueError, TypeError, orjson.JSONDecodeError):
        raise ValidationError("embedding: expected comma-separated numbers or a JSON array") from None
    if not all(math.isfinite(x) for x in vector):
        raise ValidationError("embedding: values must be finite numbers")
    if len(vector) != size:
        raise ValidationError(f"embedding: has {len(vector)} dimensions, the collection uses {size}")
    return vector


@router.get("/recall", summary="Hybrid recall: vector + keyword candidates, scored as AutoMem scores them")
def recall(
    request: Request,
    services: Annotated[Services, Depends(get_services)],
    engine: Annotated[RecallEngine, Depends(get_engine)],
    query: str | None = None,
    limit: int | None = None,
    tags: list[str] | None = None,
    tag_mode: str = "any",
    tag_match: str = "prefix",
    embedding: str | None = None,
):
    settings = services.settings
    recall_request = RecallRequest(
        query=query,
        embedding=_embedding(request, services.vector_size),
        limit=_limit(request, settings.recall_default_limit, settings.recall_max_limit),
        tag_filter=TagFilter(
            tags=tuple(list_param(request, "tags")),
            mode=_choice(request, "tag_mode", ("any", "all"), "any"),
            match=_choice(request, "tag_match", ("prefix", "exact"), "prefix"),
        ),
    )
    return ORJSONResponse(engine.recall(recall_request))
