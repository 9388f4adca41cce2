"""recall_memory's input: the schema of the spec, and which REST call each mode makes.

Three mutually exclusive modes (spec: recall-operations, "MCP Client Routing"):

1. ``memory_id`` → ``GET /memory/{id}``; every other argument is ignored.
2. ``exhaustive: true`` → ``GET /memory/by-tag`` (paged exact-match listing); ranked-only
   arguments are rejected, as are ``tag_match: "prefix"`` and ``tag_mode: "all"``.
3. otherwise → ``GET /recall`` (ranked); ``offset > 0`` is rejected (raise ``limit`` instead).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field

from pipeline.errors import ValidationError

ENUMERATION_MAX_LIMIT = 200

RANKED_ONLY = (
    "query", "queries", "embedding", "time_query", "start", "end", "exclude_tags", "expand_relations",
    "expand_entities", "auto_decompose", "expansion_limit", "relation_limit", "expand_min_importance",
    "expand_min_strength", "current_only", "state_debug", "state_mode", "recency_bias", "scope_fallback",
    "expand_respect_tags", "min_score", "adaptive_floor", "sort", "context", "language", "active_path",
    "context_tags", "context_types", "priority_ids", "per_query_limit",
)
"""Arguments that only ranked recall understands (rejected in enumeration mode)."""

# Arguments that are not forwarded to GET /recall: they steer this tool, not the engine.
_TOOL_ONLY = frozenset({"memory_id", "exhaustive", "format", "offset"})

Format = Literal["text", "items", "detailed", "json"]


class RecallMemoryArgs(BaseModel):
    """recall_memory's arguments; descriptions are what the calling model reads."""

    model_config = ConfigDict(extra="forbid")

    memory_id: str | None = Field(None, description="MODE: ID fetch. When set, fetches the single memory by ID and IGNORES all other params. Routes to GET /memory/{id}; updates last_accessed.")
    exhaustive: bool | None = Field(None, description="MODE: tag enumeration. When true, requires non-empty `tags`. Routes to GET /memory/by-tag for paginated exact-match listing — NOT ranked retrieval. Use for cleanup/audit workflows where ranked recall undercounts. `limit` is clamped to 200. `tag_match: \"prefix\"` and `tag_mode: \"all\"` are rejected in this mode.")
    query: str | None = Field(None, description="Semantic search query (natural language). Describe what you're looking for.")
    queries: list[str] | None = Field(None, description="Multiple queries for broader recall. Results are deduplicated server-side.")
    embedding: list[float] | None = Field(None, description="Optional embedding vector for direct similarity search")
    limit: int | None = Field(None, ge=1, le=200, description="Max memories to return. Schema allows 1–200; in enumeration mode (`exhaustive: true`) the server honors up to 200, while ranked mode is typically clamped server-side to ~50. When omitted, the server defaults to 5 in ranked mode and 20 in enumeration mode.")
    tags: list[str] | None = Field(None, description="Filter by tags. Use project name as first tag for scoping.")
    exclude_tags: list[str] | None = Field(None, description="Ranked-mode only. Tags to exclude from results (any match excludes). Independent of `tag_match` — supports both exact and prefix matching internally on the server.")
    tag_mode: Literal["any", "all"] | None = Field(None, description="\"any\" matches memories with any tag (default), \"all\" requires all tags")
    tag_match: Literal["exact", "prefix"] | None = Field(None, description="\"prefix\" (ranked default) matches tags that start with the value, so `tags: [\"automem\"]` also matches `automem-evals`; \"exact\" matches whole tags only. Enumeration mode is always exact.")
    time_query: str | None = Field(None, description="Natural language time filter: \"today\", \"yesterday\", \"last week\", \"last 30 days\"")
    start: str | None = Field(None, description="ISO timestamp lower bound (alternative to time_query)")
    end: str | None = Field(None, description="ISO timestamp upper bound")
    expand_entities: bool | None = Field(None, description="Enable multi-hop reasoning via entity expansion. Finds memories about people/places mentioned in seed results. Use for \"What is X's sister's job?\" type questions.")
    expand_relations: bool | None = Field(None, description="Follow graph relationships from seed results to find related memories.")
    expansion_limit: int | None = Field(None, ge=1, le=500, description="Max total expanded memories (default: 25)")
    relation_limit: int | None = Field(None, ge=1, le=200, description="Max relations to follow per seed memory (default: 5)")
    expand_min_importance: float | None = Field(None, ge=0, le=1, description="Minimum importance score for expanded results. Filters out low-relevance memories during graph/entity expansion. Recommended: 0.3-0.5 for broad context, 0.6-0.8 for focused results. Seed results are never filtered, only expanded ones.")
    expand_min_strength: float | None = Field(None, ge=0, le=1, description="Minimum relation strength to follow during graph expansion. Only traverses edges above this threshold. Recommended: 0.3 for exploratory, 0.6+ for high-confidence connections only. Does not affect entity expansion.")
    expand_respect_tags: bool | None = Field(None, description="Ranked-mode only. When true, graph/entity expansion stays within the original tag scope; when false, expansion may include related context outside the tags.")
    context: str | None = Field(None, description="Context label (e.g., \"coding-style\", \"architecture\"). Boosts matching preferences.")
    language: str | None = Field(None, description="Programming language hint (e.g., \"python\", \"typescript\"). Prioritizes language-specific memories.")
    active_path: str | None = Field(None, description="Current file path for language auto-detection (e.g., \"src/auth.ts\")")
    context_tags: list[str] | None = Field(None, description="Priority tags to boost in results (e.g., [\"coding-style\", \"preferences\"])")
    context_types: list[str] | None = Field(None, description="Priority memory types to boost (e.g., [\"Style\", \"Preference\"])")
    priority_ids: list[str] | None = Field(None, description="Specific memory IDs to ensure are included in results")
    auto_decompose: bool | None = Field(None, description="Auto-extract entities and topics from query to generate supplementary searches.")
    per_query_limit: int | None = Field(None, ge=1, le=50, description="Per-query result limit when using queries[] (default: 5)")
    state_mode: Literal["current", "history"] | None = Field(None, description="Ranked-mode only. `current` returns active memories; `history` allows superseded/invalidated memories for audit timelines. Prefer this over current_only for new clients.")
    current_only: bool | None = Field(None, json_schema_extra={"default": True}, description="Ranked-mode only. When true, server suppresses archived, not-yet-valid, expired, invalidated, or superseded memories from active context.")
    state_debug: bool | None = Field(None, json_schema_extra={"default": False}, description="Ranked-mode only. Include state-filter suppression/replacement IDs and reasons when current_only is true.")
    recency_bias: Literal["off", "on", "auto"] | None = Field(None, description="Ranked-mode only. Controls service recency boosting: auto lets the service infer, on forces boosting, off disables it.")
    scope_fallback: bool | None = Field(None, description="Ranked-mode only. Allow fallback outside the requested tag scope when scoped recall has weak evidence; diagnostics report tag_scope and outside_tag_scope.")
    min_score: float | None = Field(None, ge=0, le=1, description="Ranked-mode only. Minimum final score threshold before results are returned.")
    adaptive_floor: bool | None = Field(None, description="Ranked-mode only. Enable the service's adaptive score floor when filtering weak matches.")
    sort: Literal["score", "time_desc", "time_asc", "updated_desc", "updated_asc"] | None = Field(None, description="Result ordering (use time_* for chronological recaps)")
    format: Format = Field("text", description="Output format: text (default), items (one block per memory, in `results` order, then one bracketed trailing block when there are notes or budget cuts), detailed (adds type/confidence/metadata keys/relation stubs), json (raw per-memory fields incl. full content/metadata/relations; whole-response token budget still applies). text/items/detailed show a content preview (default 400 chars) and keep any stored summary as an additive field — fetch a full record via memory_id.")
    offset: int | None = Field(None, ge=0, description="Enumeration mode only (`exhaustive: true`): records to skip, for paging. Ranked recall has no offset and rejects one; raise `limit` instead.")


@dataclass(frozen=True)
class RecallPlan:
    """The one REST call a recall_memory invocation makes."""

    mode: Literal["id_fetch", "enumeration", "ranked"]
    path: str
    params: tuple[tuple[str, str], ...] = ()
    offset: int = 0  # enumeration: the page's offset, for next_offset


def _param_values(value: object) -> list[str]:
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, list):
        return [str(v) for v in value]
    return [str(value)]


def plan_recall(args: RecallMemoryArgs) -> RecallPlan:
    """Choose the mode and build its REST call; a ``ValidationError`` names what is wrong."""
    if args.memory_id is not None:
        if not args.memory_id.strip():
            raise ValidationError("memory_id: must not be empty")
        return RecallPlan("id_fetch", f"/memory/{quote(args.memory_id, safe='')}")

    given = args.model_fields_set
    if args.exhaustive:
        tags = [t for t in (args.tags or []) if t.strip()]
        if not tags:
            raise ValidationError("exhaustive: true requires non-empty tags")
        rejected = [name for name in RANKED_ONLY if name in given and getattr(args, name) is not None]
        if rejected:
            raise ValidationError(f"exhaustive mode (tag enumeration) does not accept: {', '.join(rejected)}")
        if args.tag_match == "prefix":
            raise ValidationError('exhaustive mode matches tags exactly: tag_match "prefix" is not accepted')
        if args.tag_mode == "all":
            raise ValidationError('exhaustive mode matches any tag: tag_mode "all" is not accepted')
        params = [("tags", t) for t in tags]
        if args.limit is not None:
            params.append(("limit", str(min(args.limit, ENUMERATION_MAX_LIMIT))))
        offset = args.offset or 0
        if offset:
            params.append(("offset", str(offset)))
        return RecallPlan("enumeration", "/memory/by-tag", tuple(params), offset)

    if args.offset:
        raise ValidationError("offset: ranked recall has no pages; raise limit instead (offset is for exhaustive: true)")
    params = []
    for name in RecallMemoryArgs.model_fields:
        value = getattr(args, name)
        if name in _TOOL_ONLY or value is None:
            continue
        if name == "embedding":
            params.append(("embedding", ",".join(repr(float(x)) for x in value)))
            continue
        params += [(name, v) for v in _param_values(value)]
    return RecallPlan("ranked", "/recall", tuple(params))
