"""The MCP endpoint, through the mcp SDK's own client over streamable HTTP, on the real stack."""

from __future__ import annotations

import asyncio
import json
import uuid
from contextlib import asynccontextmanager

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from ops.bench.stack import API_TOKEN, AUTH, wait_until

pytestmark = pytest.mark.integration

TOOL_NAMES = {"store_memory", "recall_memory", "associate_memories", "update_memory", "delete_memory", "check_database_health"}


@asynccontextmanager
async def mcp_session(url: str, headers: dict[str, str] | None = None):
    async with httpx2.AsyncClient(headers=AUTH if headers is None else headers, timeout=60) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


def run(stack, scenario, headers=None, url=None):
    async def main():
        async with mcp_session(url or f"{stack.url}/mcp", headers) as session:
            return await scenario(session)

    return asyncio.run(main())


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content)


def scope() -> str:
    return f"mcp-{uuid.uuid4().hex[:10]}"


def test_lists_the_six_tools_with_the_recall_schemas(stack):
    async def scenario(session):
        return (await session.list_tools()).tools

    tools = {tool.name: tool for tool in run(stack, scenario)}
    assert set(tools) == TOOL_NAMES
    recall = tools["recall_memory"]
    assert recall.output_schema["required"] == ["count", "results"]
    assert {"memory_id", "exhaustive", "format", "offset", "expand_entities"} <= set(recall.input_schema["properties"])
    assert recall.annotations.read_only_hint is True
    assert tools["delete_memory"].annotations.destructive_hint is True
    assert tools["store_memory"].input_schema["required"] == ["content"]


def test_store_then_recall_in_every_format_then_fetch_update_delete(stack):
    tag = scope()
    long_content = "Chose PostgreSQL for the primary database because of JSONB. " + "detail " * 120

    async def scenario(session):
        stored = await session.call_tool("store_memory", {"content": long_content, "tags": [tag], "importance": 0.9,
                                                          "metadata": {"source": "mcp-test"}})
        assert not stored.is_error, text_of(stored)
        memory_id = stored.structured_content["memory_id"]
        if stored.structured_content["state"] == "queued":  # a cold stack can take longer than the 2 s wait
            assert "queued" in text_of(stored)
            for _ in range(300):
                probe = await session.call_tool("recall_memory", {"query": "postgresql database", "tags": [tag]})
                if probe.structured_content["count"]:
                    break
                await asyncio.sleep(0.1)
        else:
            assert "recallable now" in text_of(stored)

        answers = {}
        for style in ("text", "items", "detailed", "json"):
            answers[style] = await session.call_tool("recall_memory", {"query": "postgresql database", "tags": [tag], "format": style})
        fetched = await session.call_tool("recall_memory", {"memory_id": memory_id, "query": "ignored", "offset": 9})
        updated = await session.call_tool("update_memory", {"memory_id": memory_id, "importance": 0.2, "tags": [tag, f"{tag}:x"]})
        after_update = await session.call_tool("recall_memory", {"memory_id": memory_id, "format": "json"})
        deleted = await session.call_tool("delete_memory", {"memory_id": memory_id})
        gone = await session.call_tool("recall_memory", {"memory_id": memory_id})
        return memory_id, answers, fetched, updated, after_update, deleted, gone

    memory_id, answers, fetched, updated, after_update, deleted, gone = run(stack, scenario)

    for style, answer in answers.items():
        assert not answer.is_error, (style, text_of(answer))
        structured = answer.structured_content
        assert structured["mode"] == "ranked" and structured["count"] == 1, style
        assert structured["results"][0]["memory_id"] == memory_id
    text = text_of(answers["text"])
    assert text.startswith("Found 1 memory") and f"ID: {memory_id}" in text and "[vector]" in text
    preview = answers["text"].structured_content["results"][0]
    assert preview["content_truncated"] is True and preview["content_chars"] == len(long_content)
    assert len(preview["content"]) == 400 and "metadata" not in preview
    # Enrichment runs in the background and may already have added its "entities" key.
    enrichment_keys = {"entities"}
    keys = answers["detailed"].structured_content["results"][0]["metadata_keys"]
    assert "source" in keys and set(keys) - {"source"} <= enrichment_keys  # in whatever order enrichment left them
    raw = answers["json"].structured_content["results"][0]
    assert raw["content"] == long_content and raw["metadata"]["source"] == "mcp-test"
    assert set(raw["metadata"]) - {"source"} <= enrichment_keys
    assert json.loads(answers["json"].content[0].text) == answers["json"].structured_content

    assert not fetched.is_error
    record = fetched.structured_content["results"][0]
    assert fetched.structured_content["mode"] == "id_fetch" and record["content"] == long_content
    assert {"t_valid", "t_invalid", "archived"} <= set(record)

    assert not updated.is_error and "importance" in updated.structured_content["updated"]
    assert after_update.structured_content["results"][0]["importance"] == 0.2
    assert not deleted.is_error
    assert gone.is_error and text_of(gone).startswith("404:") and "not found" in text_of(gone)


def test_recall_budget_cuts_large_results_in_order(stack):
    tag = scope()
    with stack.client() as api:
        for i in range(10):
            response = api.post("/memory", json={"content": f"budget item {i} " + "padding words " * 560, "tags": [tag],
                                                 "importance": 0.9 - i * 0.05})
            assert response.status_code == 201, response.text

    async def scenario(session):
        return await session.call_tool("recall_memory", {"tags": [tag], "limit": 10, "format": "json"})

    answer = run(stack, scenario)
    assert not answer.is_error, text_of(answer)
    structured = answer.structured_content
    total_chars = len(json.dumps(structured)) + sum(len(b.text) for b in answer.content)
    assert total_chars / 4 <= 18_000  # the default AUTOMEM_RECALL_TOKEN_BUDGET bounds the whole response
    assert structured["truncation"]["applied"] is True
    assert structured["truncation"]["omitted_results"] + structured["count"] == 10
    assert 0 < structured["count"] < 10


def test_tool_errors_are_is_error_results_with_the_rest_message(stack):
    async def scenario(session):
        return {
            "offset_in_ranked": await session.call_tool("recall_memory", {"query": "x", "offset": 5}),
            "ranked_param_in_enumeration": await session.call_tool("recall_memory", {"tags": ["a"], "exhaustive": True, "query": "x"}),
            "prefix_in_enumeration": await session.call_tool("recall_memory", {"tags": ["a"], "exhaustive": True, "tag_match": "prefix"}),
            "bad_limit": await session.call_tool("recall_memory", {"query": "x", "limit": 0}),
            "empty_content": await session.call_tool("store_memory", {"content": "   "}),
            "update_nothing": await session.call_tool("update_memory", {"memory_id": "no-such-memory"}),
            "unknown_tool": await session.call_tool("forget_everything", {}),
            "associate_missing_memories": await session.call_tool(
                "associate_memories", {"memory1_id": "no-such-a", "memory2_id": "no-such-b", "type": "RELATES_TO", "strength": 0.9}),
        }

    answers = run(stack, scenario)
    assert all(answer.is_error for answer in answers.values()), {k: text_of(v) for k, v in answers.items() if not v.is_error}
    assert "offset" in text_of(answers["offset_in_ranked"])
    assert "query" in text_of(answers["ranked_param_in_enumeration"])
    assert "prefix" in text_of(answers["prefix_in_enumeration"])
    assert "limit" in text_of(answers["bad_limit"])
    assert text_of(answers["empty_content"]) == "400: content: must not be empty"
    assert text_of(answers["update_nothing"]).startswith("400: body: give at least one")
    assert "unknown tool" in text_of(answers["unknown_tool"])
    assert text_of(answers["associate_missing_memories"]).startswith("404:")


def test_associate_and_enumeration_tools(stack):
    tag = scope()
    with stack.client() as api:
        ids = [api.post("/memory", json={"content": f"enumerated {i}", "tags": [tag]}).json()["memory_id"] for i in range(3)]

    async def scenario(session):
        return {
            "link": await session.call_tool(
                "associate_memories", {"memory1_id": ids[0], "memory2_id": ids[1], "type": "LEADS_TO", "strength": 0.7}),
            "page": await session.call_tool("recall_memory", {"tags": [tag], "exhaustive": True, "limit": 2, "format": "json"}),
        }

    answers = run(stack, scenario)
    assert not answers["link"].is_error, text_of(answers["link"])
    with stack.client() as api:
        related = api.get(f"/memories/{ids[0]}/related", params={"relationship_types": "LEADS_TO"}).json()["related_memories"]
    assert [r["id"] for r in related] == [ids[1]]
    page = answers["page"].structured_content
    assert not answers["page"].is_error and page["mode"] == "enumeration"
    assert page["count"] == 2 and page["has_more"] is True and page["next_offset"] == 2
    assert {r["memory_id"] for r in page["results"]} <= set(ids)


def test_health_tool(stack):
    async def scenario(session):
        return await session.call_tool("check_database_health", {})

    answer = run(stack, scenario)
    assert not answer.is_error
    assert answer.structured_content["status"] == "healthy"
    assert text_of(answer).startswith("Status: healthy")


def test_mcp_takes_the_same_tokens_as_rest(stack):
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    headers = {"Accept": "application/json, text/event-stream"}
    for extra in ({}, {"Authorization": "Bearer wrong"}, {"X-API-Key": "wrong"}):
        response = httpx.post(f"{stack.url}/mcp", json=initialize, headers={**headers, **extra}, timeout=10)
        assert response.status_code == 401
        assert response.json() == {"status": "error", "code": 401, "message": "missing or invalid API token"}

    async def scenario(session):
        return await session.call_tool("check_database_health", {})

    assert not run(stack, scenario, headers={"X-API-Key": API_TOKEN}).is_error
    assert not run(stack, scenario, headers={}, url=f"{stack.url}/mcp?api_key={API_TOKEN}").is_error


def test_request_id_of_an_mcp_call_reaches_the_rest_route_and_every_actor(stack):
    request_id = uuid.uuid4().hex

    async def scenario(session):
        return await session.call_tool("store_memory", {"content": f"traced write {request_id}", "tags": [scope()]})

    stored = run(stack, scenario, headers={**AUTH, "X-Request-ID": request_id})
    assert not stored.is_error, text_of(stored)

    def lines(name):
        found = []
        for line in (stack.data_dir / f"{name}.log").read_text(errors="replace").splitlines():
            start = line.find("{")
            if start >= 0:
                try:
                    record = json.loads(line[start:])
                except ValueError:
                    continue
                if record.get("request_id") == request_id:
                    found.append(record)
        return found

    web = lines("web")
    assert any(r.get("path") == "/memory" and r.get("status") == 201 for r in web), web
    assert any(r.get("path") == "/mcp" for r in web), web

    # Every stage the write passes through: persist, embed, index (recallable), then the
    # enrichment worker and the web's SIMILAR_TO linking, which follow it off the write path.
    stages = {"persist_memories", "embed_memories", "index_vectors", "enrich_memories", "link_similar"}

    def actors():
        return {r.get("actor") for r in lines("web") + lines("worker") if r.get("message") == "message processed"}

    # Enrichment and SIMILAR_TO run after the write path, behind whatever else the shared stack
    # has queued; on a loaded 2-core machine a full suite run has needed more than a minute.
    wait_until(lambda: stages <= actors(), timeout=240, message=f"every stage logged request_id {request_id}")
    assert API_TOKEN not in (stack.data_dir / "web.log").read_text()
