"""GET and DELETE /memory/by-tag (AutoMem's). Included before the /memory/{id} routes.

Tags match case-insensitively and exactly by default (``tag_match=prefix`` widens to colon
prefixes, as recall does); ``tag_mode`` is any (default) or all.

A delete answers with what it deleted, as the spec's response says, so it runs while the
request waits: ``pipeline.tag_delete`` says how, and why it is the one write the API does not
queue.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query
from starlette.concurrency import run_in_threadpool

from api.auth import ApiAuth
from api.deps import get_services, graph_call
from api.responses import ORJSONResponse
from pipeline.errors import ValidationError
from pipeline.graph import TagFilter
from pipeline.services import Services
from pipeline.tag_delete import delete_by_tag as delete_tagged

router = APIRouter(dependencies=[ApiAuth], tags=["memory"])

TagsParam = Annotated[list[str] | None, Query(description="Tags (repeat the parameter, or comma-separated); at most RECALL_MAX_LIST_ITEMS (100), each at most MAX_TAG_LENGTH characters.")]
ModeParam = Annotated[Literal["any", "all"], Query(description="any (default): memories carrying at least one of tags; all: every one.")]
MatchParam = Annotated[Literal["exact", "prefix"], Query(description="exact (default): whole tags, case-insensitive; prefix: segment prefixes.")]


def _tag_filter(tags: list[str] | None, mode: str, match: str, max_items: int, max_chars: int) -> TagFilter:
    flat = list(dict.fromkeys(t.strip() for value in tags or [] for t in value.split(",") if t.strip()))
    if not flat:
        raise ValidationError("tags: at least one tag is required")
    if len(flat) > max_items:
        raise ValidationError(f"tags: {len(flat)} values exceeds the limit of {max_items}")
    if any(len(t) > max_chars for t in flat):
        raise ValidationError(f"tags: a value longer than {max_chars} characters exceeds the limit of {max_chars}")
    return TagFilter(tuple(flat), mode, match)


@router.delete("/memory/by-tag", summary="Delete every memory carrying the given tags")
async def delete_by_tag(
    services: Annotated[Services, Depends(get_services)],
    tags: TagsParam = None,
    tag_mode: ModeParam = "any",
    tag_match: MatchParam = "exact",
):
    import pipeline.actors  # noqa: F401  (installs the broker and declares the actors the map sends to)
    from pipeline.stages import send_drop_vectors

    settings = services.settings
    tag_filter = _tag_filter(tags, tag_mode, tag_match, settings.recall_max_list_items, settings.max_tag_length)

    def delete_all() -> int:
        return graph_call(lambda: delete_tagged(services.graph, tag_filter, services.tracker.tombstone, send_drop_vectors))

    deleted = await run_in_threadpool(delete_all)
    return ORJSONResponse({"status": "success", "tags": list(tag_filter.tags), "deleted_count": deleted})
