"""The OpenAPI schema says what the routes really accept and answer.

Routes read their bodies and most query parameters by hand (AutoMem's leniency: lists as
repeats or comma lists, booleans in several spellings, unknown keys ignored, errors in
AutoMem's envelope), so FastAPI cannot infer them. This module declares them in one place:

- request bodies, with the live limits (content length, tags, batch size, vector size);
- query parameters of the hand-parsed read routes;
- every status a route can answer: the extra 2xx (202 queued, 207 partial) and each error,
  always the ``ErrorEnvelope`` (FastAPI's default 422 ``HTTPValidationError`` never happens
  here: validation errors are 400 in the envelope);
- non-JSON answers (``/metrics`` text, ``/backup`` gzip).

Schemathesis (``ops/bench/fuzz.py``) fuzzes from this schema and checks answers against it.
"""

from __future__ import annotations

from typing import Any, Callable

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from pipeline.config import Settings
from pipeline.limits import HINT_MAX_CHARS, TIME_QUERY_MAX_CHARS
from pipeline.records import MEMORY_TYPES
from pipeline.relations import AUTHORABLE_TYPES

ENVELOPE_REF = {"$ref": "#/components/schemas/ErrorEnvelope"}
ERROR_ENVELOPE = {
    "type": "object",
    "description": "AutoMem's error envelope: code is the HTTP status, message names the field at fault.",
    "required": ["status", "code", "message"],
    "properties": {"status": {"type": "string", "enum": ["error"]}, "code": {"type": "integer"},
                   "message": {"type": "string", "minLength": 1}},
}
# Every JSON success answer (AutoMem's shape) carries a status word.
SUCCESS = {"type": "object", "required": ["status"], "properties": {"status": {"type": "string"}}}

ERRORS = {
    400: "Invalid input; the message names the parameter or field",
    401: "Missing or invalid API token",
    403: "Admin token missing or wrong (X-Admin-Token)",
    404: "Not found",
    409: "The memory is still being written, or a run of that cycle is already in progress; retry later",
    413: "Request body too large",
    415: "Request body not declared as the route's media type (Content-Type: application/json)",
    429: "Pipeline behind (BACKPRESSURE_MAX_PENDING); retry after Retry-After seconds",
    503: "A backing store is unreachable; try again shortly",
}
# Successes besides the route's own status code.
EXTRA_SUCCESS: dict[tuple[str, str], dict[int, str]] = {
    ("post", "/memory"): {202: "Accepted and queued (durable); not yet recallable"},
    ("post", "/memory/batch"): {207: "Some items refused; per-item results"},
    ("get", "/memory/{memory_id}"): {202: "Accepted, still in the pipeline (status pending), or its write failed "
                                           "for good and waits in the dead-letter queue (status failed, with the reason)"},
    ("patch", "/memory/{memory_id}"): {202: "Update queued"},
    ("delete", "/memory/{memory_id}"): {202: "Delete queued"},
    ("post", "/associate"): {207: "Some associations refused; per-item results"},
    ("post", "/consolidate"): {202: "Runs started; not finished within the wait"},
    ("post", "/admin/sync"): {202: "Run started; not finished within the wait"},
    ("post", "/admin/sync/recover"): {202: "Run started; not finished within the wait"},
    ("post", "/admin/reembed"): {202: "Run started; not finished within the wait"},
    ("post", "/admin/import/slack"): {202: "Import job started"},
}
BACKPRESSURED = {("post", "/memory"), ("post", "/memory/batch"), ("post", "/admin/import/slack")}
CONFLICTS = {("patch", "/memory/{memory_id}"), ("delete", "/memory/{memory_id}"), ("post", "/consolidate"),
             ("post", "/admin/sync"), ("post", "/admin/sync/recover"), ("post", "/admin/reembed")}
FORBIDDEN = {("post", "/consolidate")}  # mode=forget, dry_run=false without the admin token
NOT_FOUND_IN_BODY = {("post", "/associate")}  # an endpoint memory that does not exist
MEDIA = {
    ("get", "/metrics"): ("text/plain", {"type": "string"}),
    ("get", "/backup"): ("application/gzip", {"type": "string", "format": "binary"}),
}

_LIST = {"type": "array", "items": {"type": "string"}}


def _memory_properties(s: Settings, vector_size: int) -> dict[str, Any]:
    text = {"type": "string", "minLength": 1, "maxLength": s.memory_content_hard_limit,
            "pattern": r"^[^\x00]*\S[^\x00]*$"}  # not blank, no NUL
    return {
        "content": text,
        "tags": {"type": "array", "maxItems": s.max_tags,
                 "items": {"type": "string", "minLength": 1, "maxLength": s.max_tag_length, "pattern": r"\S"}},
        "importance": {"type": "number", "minimum": 0, "maximum": 1},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "type": {"type": "string", "enum": list(MEMORY_TYPES)},
        "timestamp": {"type": "string", "format": "date-time"},
        "t_valid": {"type": "string", "format": "date-time"},
        "t_invalid": {"type": "string", "format": "date-time"},
        "metadata": {"type": "object", "description": f"≤ {s.max_metadata_bytes} bytes, ≤ {s.max_metadata_depth} levels"},
        "embedding": {"type": "array", "items": {"type": "number"}, "minItems": vector_size, "maxItems": vector_size},
    }


def _new_memory(s: Settings, vector_size: int) -> dict[str, Any]:
    memory_id = {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._:\-]{0,127}$"}
    return {"type": "object", "required": ["content"],
            "properties": {**_memory_properties(s, vector_size), "id": memory_id, "memory_id": memory_id}}


def _association() -> dict[str, Any]:
    return {"type": "object", "required": ["memory1_id", "memory2_id"], "properties": {
        "memory1_id": {"type": "string", "minLength": 1}, "memory2_id": {"type": "string", "minLength": 1},
        "type": {"type": "string", "enum": list(AUTHORABLE_TYPES)},
        "strength": {"type": "number", "minimum": 0, "maximum": 1}}}


def _bodies(s: Settings, vector_size: int) -> dict[tuple[str, str], tuple[bool, str, dict[str, Any]]]:
    """(method, path) → (required, media type, schema)."""
    patch = {"type": "object", "minProperties": 1, "properties": _memory_properties(s, vector_size)}
    return {
        ("post", "/memory"): (True, "application/json", _new_memory(s, vector_size)),
        ("patch", "/memory/{memory_id}"): (True, "application/json", patch),
        ("post", "/memory/batch"): (True, "application/json", {
            "type": "object", "required": ["memories"], "properties": {"memories": {
                "type": "array", "minItems": 1, "maxItems": s.batch_max_items, "items": _new_memory(s, vector_size)}}}),
        ("post", "/associate"): (True, "application/json", {"oneOf": [
            _association(),
            {"type": "object", "required": ["associations"], "properties": {"associations": {
                "type": "array", "minItems": 1, "maxItems": 500, "items": _association()}}}]}),
        ("post", "/consolidate"): (False, "application/json", {"type": "object", "properties": {
            "mode": {"type": "string", "enum": ["full", "decay", "creative", "cluster", "forget"]},
            "dry_run": {"type": "boolean"}}}),
        ("post", "/admin/sync"): (False, "application/json", {"type": "object", "properties": {
            "dry_run": {"type": "boolean"}}}),
        ("post", "/admin/sync/recover"): (False, "application/json", {"type": "object", "properties": {
            "dry_run": {"type": "boolean"}}}),
        ("post", "/admin/reembed"): (False, "application/json", {"type": "object", "properties": {
            "batch_size": {"type": "integer", "minimum": 1, "maximum": 2048},
            "limit": {"type": "integer", "minimum": 1}, "force": {"type": "boolean"}}}),
        ("post", "/admin/deadletters/replay"): (False, "application/json", {"type": "object", "properties": {
            "queue": {"type": "string", "enum": ["persist", "embed", "vectors", "enrich", "maintenance"]},
            "ids": _LIST}}),
        ("post", "/enrichment/reprocess"): (False, "application/json", {"type": "object", "properties": {
            "ids": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}}}),
        ("post", "/admin/import/slack"): (True, "application/zip", {"type": "string", "format": "binary"}),
        ("post", "/ingest/slack/events"): (True, "application/json", {"type": "object"}),
    }


def _query(**parameters: tuple[dict[str, Any], str]) -> list[dict[str, Any]]:
    """Query parameters as name=(schema, description)."""
    return [{"name": name, "in": "query", "required": False, "schema": schema, "description": description}
            for name, (schema, description) in parameters.items()]


# Query parameters of routes that parse them by hand (recall declares its own).
QUERY_PARAMETERS = {
    ("post", "/memory"): _query(
        wait=({"type": "boolean", "default": True}, "Wait (bounded by WRITE_WAIT_SECONDS) until the write is "
                                                    "recallable: 201 then, 202 once queued otherwise.")),
    ("get", "/memory/by-tag"): _query(
        tags=(_LIST, "Tags to list (repeat the parameter or comma-separate); a memory carrying any of them is "
                     "listed. Exact, case-insensitive. At most RECALL_MAX_LIST_ITEMS tags (100), each at most "
                     "MAX_TAG_LENGTH characters."),
        tag_mode=({"type": "string", "enum": ["any"]}, "Only any: enumeration is any-of."),
        tag_match=({"type": "string", "enum": ["exact"]}, "Only exact: enumeration matches whole tags."),
        limit=({"type": "integer", "minimum": 1}, "Page size (default 20; above 200 is clamped)."),
        offset=({"type": "integer", "minimum": 0, "maximum": 2**63 - 1}, "Memories to skip (default 0); "
                "has_more says whether another page follows.")),
    ("get", "/startup-recall"): _query(
        limit=({"type": "integer", "minimum": 1}, "Most memories per section (default 10; above 50 is clamped).")),
    ("get", "/memories/{memory_id}/related"): _query(
        relationship_types=(_LIST, "Relation types to follow (comma list or repeated); default the 11 authorable "
                                   "types; SIMILAR_TO, PRECEDED_BY and DISCOVERED only when named."),
        max_depth=({"type": "integer", "minimum": 1, "maximum": 3}, "Hops to follow (default 1)."),
        limit=({"type": "integer", "minimum": 1}, "Most related memories (default 20; above 200 is clamped).")),
    ("post", "/enrichment/reprocess"): _query(
        ids=(_LIST, "Memory ids to enrich again (comma list), instead of a JSON body.")),
}
# Path parameters, described once for every route that takes them.
PATH_PARAMETERS = {
    "memory_id": "The memory's id (as POST /memory answered it, or the id the client supplied).",
    "run_id": "A maintenance run's id (as POST /consolidate or POST /admin/sync answered it).",
    "job_id": "The import job's id (as POST /admin/import/slack answered it).",
    "queue": "The pipeline stage whose dead-letter queue to read.",
    "message_id": "The dead-lettered message's id (from GET /admin/deadletters).",
}


def _recall_bounds(s: Settings) -> dict[str, dict[str, Any]]:
    """The ceilings parse_recall enforces, merged into the recall parameters' schemas (live settings)."""
    def listed(items: int, chars: int) -> dict[str, Any]:
        return {"maxItems": items, "items": {"type": "string", "maxLength": chars}}

    tag_list = listed(s.recall_max_list_items, s.max_tag_length)
    return {
        "query": {"maxLength": s.recall_max_query_chars},
        "queries": listed(s.recall_max_queries, s.recall_max_query_chars),
        "time_query": {"maxLength": TIME_QUERY_MAX_CHARS},
        "tags": tag_list, "exclude_tags": tag_list, "context_tags": tag_list, "context_types": tag_list,
        "priority_ids": listed(s.recall_max_list_items, HINT_MAX_CHARS),
        "context": {"maxLength": HINT_MAX_CHARS}, "language": {"maxLength": HINT_MAX_CHARS},
        "active_path": {"maxLength": HINT_MAX_CHARS},
    }


def _error_codes(method: str, path: str, operation: dict[str, Any]) -> list[int]:
    codes = []
    if operation.get("parameters") or operation.get("requestBody"):
        codes.append(400)
    if path != "/health":
        codes.append(401)
    if path.startswith("/admin") or path == "/backup" or (method, path) in FORBIDDEN:
        codes.append(403)
    if "{" in path or (method, path) in NOT_FOUND_IN_BODY:
        codes.append(404)
    if (method, path) in CONFLICTS:
        codes.append(409)
    if operation.get("requestBody"):
        codes.extend((413, 415))
    if (method, path) in BACKPRESSURED:
        codes.append(429)
    if path != "/health":
        codes.append(503)
    return codes


def shape_schema(schema: dict[str, Any], settings: Settings, vector_size: int) -> dict[str, Any]:
    """Apply the declarations above to FastAPI's generated schema (in place; returned)."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components.pop("HTTPValidationError", None)
    components.pop("ValidationError", None)
    components["ErrorEnvelope"] = ERROR_ENVELOPE
    bodies = _bodies(settings, vector_size)
    recall_bounds = _recall_bounds(settings)
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            key = (method, path)
            if key in QUERY_PARAMETERS:
                known = {p["name"] for p in operation.get("parameters", [])}
                operation.setdefault("parameters", []).extend(p for p in QUERY_PARAMETERS[key] if p["name"] not in known)
            for parameter in operation.get("parameters", []):
                if key == ("get", "/recall") and parameter["name"] in recall_bounds:
                    parameter["schema"] = {**parameter["schema"], **recall_bounds[parameter["name"]]}
                if parameter["in"] == "path":
                    parameter.setdefault("description", PATH_PARAMETERS.get(parameter["name"]))
            if key in bodies:
                required, media, body_schema = bodies[key]
                operation["requestBody"] = {"required": required, "content": {media: {"schema": body_schema}}}
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            for code, description in EXTRA_SUCCESS.get(key, {}).items():
                responses.setdefault(str(code), {"description": description})
            for code, response in responses.items():
                if code.startswith("2"):
                    media, body_schema = MEDIA.get(key, ("application/json", SUCCESS))
                    response["content"] = {media: {"schema": body_schema}}
            for code in _error_codes(method, path, operation):
                responses[str(code)] = {"description": ERRORS[code],
                                        "content": {"application/json": {"schema": ENVELOPE_REF}}}
            if path == "/health":
                responses["503"] = {"description": "Unhealthy (broker down): the same health report",
                                    "content": {"application/json": {"schema": SUCCESS}}}
    return schema


def install_openapi(app: FastAPI, settings: Settings, vector_size: Callable[[], int]) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description,
                                 routes=app.routes)
            app.openapi_schema = shape_schema(schema, settings, vector_size())
        return app.openapi_schema

    app.openapi = openapi
