"""Associations a client asked for (POST /associate), written to the graph.

The API validated the request and checked that both memories exist or are still queued;
this actor ``MERGE``s the edges, so a redelivered message updates them in place. An
endpoint that is still being persisted makes the message retry (with backoff) until it is
there; one that was deleted meanwhile is skipped.
"""

from __future__ import annotations

from typing import Any

from pipeline.actor_context import services
from pipeline.relationships import Link, merge_links
from pipeline.relations import BY_NAME
from pipeline.resilience import store_call
from pipeline.stages import stage_actor


class EndpointPending(Exception):
    """A memory of the association is accepted but not persisted yet: retry later."""


@stage_actor("link_memories")
def link_memories(request_id: str, links: list[dict[str, Any]], at: str) -> None:
    svc = services()
    by_type: dict[str, list[Link]] = {}
    for item in links:
        by_type.setdefault(item["type"], []).append(Link(item["memory1_id"], item["memory2_id"], item["strength"]))
    missing: list[Link] = []
    for name, group in by_type.items():
        made = store_call(merge_links)(svc.graph, BY_NAME[name], group, at)
        missing += [link for link in group if (link.source, link.target) not in made]
    if missing:
        ids = {m for link in missing for m in (link.source, link.target)}
        if any(svc.tracker.pending(m) for m in ids):
            raise EndpointPending(f"association {request_id}: waiting for {len(missing)} endpoint(s) to be persisted")
    svc.tracker.finish([request_id], "associate", "linked")
