"""The six MCP tools: their input models, annotations, and the REST call each makes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Literal
from urllib.parse import quote

import mcp_types as types
from pydantic import BaseModel, ConfigDict, Field

from api.mcp import recall_format as fmt
from api.mcp.recall_args import RecallMemoryArgs, plan_recall
from api.mcp.rest import Caller, RestClient
from api.mcp.schema import input_schema
from pipeline.records import MEMORY_TYPES

# The authorable relationship types (spec: api-reference, POST /associate). The REST route
# validates; the enum here tells the calling model what it may choose.
AUTHORABLE_RELATIONS = (
    "RELATES_TO", "LEADS_TO", "OCCURRED_BEFORE", "PREFERS_OVER", "EXEMPLIFIES", "CONTRADICTS",
    "REINFORCES", "INVALIDATED_BY", "EVOLVED_INTO", "DERIVED_FROM", "PART_OF",
)


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StoreMemoryArgs(_Args):
    content: str = Field(description="The memory itself: a decision, preference, fact, pattern or insight, in one self-contained statement.")
    tags: list[str] | None = Field(None, description="Tags for scoping and filtering. Put the project name first; use colon segments (slack:channel:general) for hierarchy.")
    importance: float | None = Field(None, ge=0, le=1, description="0–1; how much this should count in recall (default 0.5).")
    type: str | None = Field(None, description=f"Memory type, one of {', '.join(MEMORY_TYPES)}; classified automatically when omitted.")
    confidence: float | None = Field(None, ge=0, le=1, description="0–1 confidence in the type.")
    metadata: dict[str, Any] | None = Field(None, description="Free-form JSON object kept with the memory.")
    timestamp: str | None = Field(None, description="ISO 8601 creation time (default: now).")
    t_valid: str | None = Field(None, description="ISO 8601 time from which the fact holds.")
    t_invalid: str | None = Field(None, description="ISO 8601 time from which the fact no longer holds.")
    embedding: list[float] | None = Field(None, description="Pre-computed embedding (must match the collection's size); computed by the pipeline when omitted.")


class UpdateMemoryArgs(_Args):
    memory_id: str = Field(description="ID of the memory to change.")
    content: str | None = Field(None, description="New content (the memory is re-embedded).")
    tags: list[str] | None = Field(None, description="Replacement tag list.")
    importance: float | None = Field(None, ge=0, le=1, description="New importance, 0–1.")
    type: str | None = Field(None, description=f"New type, one of {', '.join(MEMORY_TYPES)}.")
    confidence: float | None = Field(None, ge=0, le=1, description="New confidence, 0–1.")
    metadata: dict[str, Any] | None = Field(None, description="Replacement metadata object.")
    timestamp: str | None = Field(None, description="New ISO 8601 creation time.")
    t_valid: str | None = Field(None, description="ISO 8601 time from which the fact holds.")
    t_invalid: str | None = Field(None, description="ISO 8601 time from which the fact no longer holds.")


class DeleteMemoryArgs(_Args):
    memory_id: str = Field(description="ID of the memory to delete from the graph and the vector index.")


class AssociateMemoriesArgs(_Args):
    memory1_id: str = Field(description="ID of the source memory.")
    memory2_id: str = Field(description="ID of the target memory.")
    type: Literal[AUTHORABLE_RELATIONS] = Field(description="Relationship type (one of the authorable types).")  # type: ignore[valid-type]
    strength: float | None = Field(None, ge=0, le=1, description="0–1 strength of the relationship (default 0.5).")


class HealthArgs(_Args):
    pass


# What recall_memory returns in structuredContent (spec: recall-memory-tool, Output Schema).
RECALL_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["count", "results"],
    "properties": {
        "mode": {"type": "string", "enum": ["ranked", "enumeration", "id_fetch"], "description": "Mode that produced the result."},
        "count": {"type": "integer", "description": "Number of memories returned"},
        "results": {"type": "array", "items": {"type": "object"}, "description": "Array of matching memories with scores"},
        "has_more": {"type": "boolean", "description": "Enumeration mode only: true if more records exist past this page. Continue at `next_offset`."},
        "limit": {"type": "integer", "description": "Enumeration mode only: page size of this response. When the response budget trims a page, `count` and `limit` shrink to the results returned, so `offset + limit` still starts the next page."},
        "offset": {"type": "integer", "description": "Enumeration mode only: offset used for this response."},
        "next_offset": {"type": "integer", "description": "Enumeration mode only, when `has_more` is true: the `offset` for the next page (this offset plus the results returned)."},
        "truncation": {
            "type": "object",
            "description": "Present when the response budget cut anything: { applied, omitted_results, reason }, plus `omitted_fields` (diagnostics dropped because they did not fit even without results) and `compacted_results` (a json result shown in compact form because it did not fit whole).",
            "properties": {
                "applied": {"type": "boolean"},
                "omitted_results": {"type": "integer"},
                "reason": {"type": "string"},
                "omitted_fields": {"type": "array", "items": {"type": "string"}},
                "compacted_results": {"type": "integer"},
            },
        },
        "dedup_removed": {"type": "integer", "description": "Number of duplicate results removed (when using multiple queries)"},
        "query": {"type": "string", "description": "Query text executed by ranked recall."},
        "sort": {"type": "string", "description": "Sort mode applied by the service."},
        "exclude_tags": {"type": "array", "items": {"type": "string"}, "description": "Tags excluded from ranked recall."},
        "state_filter": {"type": "object", "description": "Current-state filtering diagnostics. Includes aggregate counts by default and detailed IDs/reasons only when state_debug=true."},
        "state_mode": {"type": "string", "description": "State mode applied by ranked recall."},
        "tag_scope": {"type": "object", "description": "Tag-scope diagnostics including whether scoped evidence was strong enough."},
        "scope_fallback": {"type": "boolean", "description": "True when recall allowed outside-scope fallback results."},
        "recency_bias": {"type": "string", "description": "Recency bias mode applied by the service."},
        "score_filter": {"type": "object", "description": "Score filtering diagnostics such as min_score, adaptive_floor, and filtered_count."},
        "queries": {"type": "array", "items": {"type": "string"}, "description": "Query variants executed by the service."},
        "vector_search": {"type": "object", "description": "Vector-search diagnostics from the service."},
        "jit_enriched_count": {"type": "integer", "description": "Number of memories enriched inline during recall."},
        "query_time_ms": {"type": "number", "description": "Service recall latency in milliseconds."},
        "entities": {"description": "Entity identity diagnostics injected by the service."},
    },
}


Handler = Callable[[Any, Caller, RestClient, int], Awaitable[fmt.ToolOutput]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    args: type[BaseModel]
    handler: Handler
    annotations: types.ToolAnnotations
    output_schema: dict[str, Any] | None = None

    def describe(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            description=self.description,
            input_schema=input_schema(self.args),
            output_schema=self.output_schema,
            annotations=self.annotations,
        )


def _memory_path(memory_id: str) -> str:
    return f"/memory/{quote(memory_id, safe='')}"


def _plain(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != "status"}


async def _recall(args: RecallMemoryArgs, caller: Caller, rest: RestClient, budget: int) -> fmt.ToolOutput:
    plan = plan_recall(args)
    answer = await rest.call("GET", plan.path, caller, params=list(plan.params))
    if plan.mode == "id_fetch":
        return fmt.present_id_fetch(answer.body, args.format)
    if plan.mode == "enumeration":
        return fmt.present_enumeration(answer.body, plan.offset, args.format, budget)
    return fmt.present_ranked(answer.body, args.format, budget)


async def _store(args: StoreMemoryArgs, caller: Caller, rest: RestClient, budget: int) -> fmt.ToolOutput:
    answer = await rest.call("POST", "/memory", caller, json=args.model_dump(exclude_none=True))
    body = _plain(answer.body)
    done = answer.status == 201
    text = (f"Memory stored (ID: {body.get('memory_id')}); recallable now." if done else
            f"Memory accepted and queued (ID: {body.get('memory_id')}, state: {body.get('state')}); it becomes recallable shortly.")
    return fmt.ToolOutput(body, [text])


async def _update(args: UpdateMemoryArgs, caller: Caller, rest: RestClient, budget: int) -> fmt.ToolOutput:
    changes = args.model_dump(exclude_unset=True, exclude={"memory_id"})
    answer = await rest.call("PATCH", _memory_path(args.memory_id), caller, json=changes)
    body = _plain(answer.body)
    return fmt.ToolOutput(body, [f"Memory {args.memory_id} updated ({', '.join(body.get('updated', [])) or 'no fields'}; state: {body.get('state')})."])


async def _delete(args: DeleteMemoryArgs, caller: Caller, rest: RestClient, budget: int) -> fmt.ToolOutput:
    answer = await rest.call("DELETE", _memory_path(args.memory_id), caller)
    body = _plain(answer.body)
    return fmt.ToolOutput(body, [f"Memory {args.memory_id} deleted (state: {body.get('state')})."])


async def _associate(args: AssociateMemoriesArgs, caller: Caller, rest: RestClient, budget: int) -> fmt.ToolOutput:
    answer = await rest.call("POST", "/associate", caller, json=args.model_dump(exclude_none=True))
    body = _plain(answer.body)
    return fmt.ToolOutput(body, [f"Associated {args.memory1_id} -[{args.type}]-> {args.memory2_id}."])


async def _health(args: HealthArgs, caller: Caller, rest: RestClient, budget: int) -> fmt.ToolOutput:
    # 503 is a health answer (the broker is down), not a failed call.
    answer = await rest.call("GET", "/health", caller, ok_statuses=(503,))
    body = answer.body
    text = (f"Status: {body.get('status')} — broker {body.get('broker')}, FalkorDB {body.get('falkordb')}, "
            f"Qdrant {body.get('qdrant')}; {body.get('memory_count')} memories, {body.get('vector_count')} vectors; "
            f"dead letters: {body.get('dead_letter_count')}.")
    return fmt.ToolOutput(body, [text])


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "store_memory",
        "Store a memory (decision, preference, pattern, insight, fact) for later recall. Waits briefly until it is recallable.",
        StoreMemoryArgs, _store, types.ToolAnnotations(title="Store memory", read_only_hint=False, destructive_hint=False, idempotent_hint=False),
    ),
    ToolSpec(
        "recall_memory",
        "Recall memories in one of three modes, selected by which params you pass. Mode 1 — ID fetch: pass memory_id "
        "to retrieve a single memory by ID (all other params are ignored). Mode 2 — Tag enumeration: pass tags + "
        "exhaustive: true for paginated exact-match listing (not ranked), with limit (≤200) and offset; continue at "
        "next_offset while has_more. Mode 3 — Ranked retrieval (default): hybrid search across vector, keyword, tags, "
        "recency and optional graph expansion; current active memories only unless state_mode is history. Use ranked "
        "recall at conversation start, before decisions and when debugging; use enumeration to count or walk every "
        "memory with a tag.",
        RecallMemoryArgs, _recall, types.ToolAnnotations(title="Recall memory", read_only_hint=True, idempotent_hint=True),
        RECALL_OUTPUT_SCHEMA,
    ),
    ToolSpec(
        "associate_memories",
        "Create a typed relationship between two memories (e.g. one LEADS_TO or EVOLVED_INTO another).",
        AssociateMemoriesArgs, _associate, types.ToolAnnotations(title="Associate memories", read_only_hint=False, destructive_hint=False, idempotent_hint=True),
    ),
    ToolSpec(
        "update_memory",
        "Change fields of an existing memory; only the fields given change. New content is re-embedded.",
        UpdateMemoryArgs, _update, types.ToolAnnotations(title="Update memory", read_only_hint=False, destructive_hint=True, idempotent_hint=True),
    ),
    ToolSpec(
        "delete_memory",
        "Delete a memory from the graph and the vector index. This cannot be undone.",
        DeleteMemoryArgs, _delete, types.ToolAnnotations(title="Delete memory", read_only_hint=False, destructive_hint=True, idempotent_hint=True),
    ),
    ToolSpec(
        "check_database_health",
        "Check the memory service: broker, FalkorDB and Qdrant connectivity, memory and vector counts, queues and dead letters.",
        HealthArgs, _health, types.ToolAnnotations(title="Check database health", read_only_hint=True, idempotent_hint=True),
    ),
)
