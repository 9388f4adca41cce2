"""The OpenAPI schema describes what the hand-parsed routes take and answer (Schemathesis fuzzes from it)."""

from __future__ import annotations

import inspect
import re

from fastapi.routing import APIRoute

from api.app import create_app
from pipeline.config import Settings

# The primitives that read a request body (api.body); a route reading one through helpers of its
# own (api.body.read_model, a route module's private helper) is found by following its calls.
BODY_READERS = ("read_json(", "read_body(")


def _api_routes(routes, prefix: str = ""):
    """Every APIRoute with its full path, through included routers (FastAPI includes them lazily)."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield prefix + route.path, route
        elif hasattr(route, "original_router"):
            yield from _api_routes(route.original_router.routes, prefix + route.include_context.prefix)


def reads_body(function, depth: int = 3) -> bool:
    """Whether ``function`` reads the request body, itself or through the functions it calls by
    name (its module's globals), up to ``depth`` calls deep."""
    source = inspect.getsource(function)
    if any(reader in source for reader in BODY_READERS):
        return True
    if depth == 0:
        return False
    for name in set(re.findall(r"\b(\w+)\(", source)):
        helper = function.__globals__.get(name)
        if inspect.isfunction(helper) and helper is not function and reads_body(helper, depth - 1):
            return True
    return False


def _app_and_schema():
    app = create_app(Settings(automem_api_token="t", admin_api_token="a", embedding_provider="hash"))
    return app, app.openapi()


def test_every_error_is_the_envelope_and_no_422_is_promised():
    _, schema = _app_and_schema()
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            assert "422" not in responses, (method, path)
            for code, response in responses.items():
                if int(code) >= 400 and not (path == "/health" and code == "503"):
                    assert response["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorEnvelope"}, (method, path, code)
            if path != "/health":
                assert "401" in responses and "503" in responses, (method, path)


def test_every_route_that_reads_a_body_declares_it():
    app, schema = _app_and_schema()
    readers = 0
    for path, route in _api_routes(app.routes):
        if not route.include_in_schema:
            continue
        if reads_body(route.endpoint):
            readers += 1
            for method in route.methods:
                assert "requestBody" in schema["paths"][path][method.lower()], (method, path)
    # memory, patch, batch, associate, consolidate, sync, recover, reembed, replay, reprocess, events
    assert readers >= 11


async def _reads_through_a_helper(request):
    return await _helper_that_reads(request)


async def _helper_that_reads(request):
    return await read_json(request, 1024)  # noqa: F821  (only its source is read)


def test_a_body_read_through_a_helper_is_found():
    assert reads_body(_reads_through_a_helper) and reads_body(_helper_that_reads)
    assert not reads_body(_app_and_schema) and not reads_body(_reads_through_a_helper, depth=0)


def test_memory_body_carries_the_live_limits():
    app = create_app(Settings(memory_content_hard_limit=1234, max_tags=7, batch_max_items=42, embedding_provider="hash"))
    schema = app.openapi()
    memory = schema["paths"]["/memory"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert memory["required"] == ["content"]
    assert memory["properties"]["content"]["maxLength"] == 1234 and memory["properties"]["tags"]["maxItems"] == 7
    batch = schema["paths"]["/memory/batch"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert batch["properties"]["memories"]["maxItems"] == 42
    assert set(schema["paths"]["/memory"]["post"]["responses"]) >= {"201", "202", "400", "413", "429"}


# Every /recall parameter the spec (api-reference.md, recall-operations.md) names.
SPEC_RECALL_PARAMETERS = {
    "query", "limit", "tags", "exclude_tags", "tag_mode", "tag_match", "time_query", "start", "end", "embedding",
    "expand_respect_tags", "context_tags", "scope_fallback", "sort", "order_by", "recency_bias", "state_mode",
    "current_only", "state_debug", "context", "language", "active_path", "context_types", "priority_ids",
    "expand_relations", "expand_entities", "relation_limit", "expansion_limit", "expand_min_importance",
    "expand_min_strength", "queries", "per_query_limit", "auto_decompose", "min_score", "adaptive_floor",
}


def test_every_parameter_of_every_route_is_described():
    _, schema = _app_and_schema()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                assert (parameter.get("description") or "").strip(), (method, path, parameter["name"])


def test_recall_documents_every_spec_parameter_and_every_one_it_reads():
    from api.routes import recall

    _, schema = _app_and_schema()
    declared = {p["name"] for p in schema["paths"]["/recall"]["get"]["parameters"]}
    assert SPEC_RECALL_PARAMETERS <= declared, SPEC_RECALL_PARAMETERS - declared
    source = inspect.getsource(recall.parse_recall) + inspect.getsource(recall._state_mode) + inspect.getsource(recall._sort)
    read = set(re.findall(r'\(request, "(\w+)"', source))
    read |= {"embedding"} if "embedding_param(request" in source else set()  # its name is inside the helper
    assert read == declared, (read - declared, declared - read)
