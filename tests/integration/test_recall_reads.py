"""Read endpoints beside /recall, and recall's degradation when a store or the embedder fails."""

from __future__ import annotations

import uuid

import pytest
from falkordb import FalkorDB

from ops.redis_servers import RedisServer, free_port
from pipeline.config import Settings
from pipeline.embedding import HashEmbedder
from pipeline.graph import GraphStore
from pipeline.query import RecallEngine, RecallRequest
from pipeline.records import Limits, build_new_record
from tests.graph_helpers import link
from ops.bench.stack import Stack

pytestmark = pytest.mark.integration


def scope() -> str:
    return f"b-{uuid.uuid4().hex[:10]}"


def store(api, content, tags, **fields) -> str:
    response = api.post("/memory", json={"content": content, "tags": tags, **fields})
    assert response.status_code == 201, response.text
    return response.json()["memory_id"]


# --- /memory/by-tag -----------------------------------------------------------------------
def test_by_tag_pages_exact_case_insensitive_any_of(api):
    tag, other = scope(), scope()
    created = [store(api, f"enumerated {i}", [tag.upper() if i % 2 else tag], timestamp=f"2025-01-0{i + 1}T00:00:00Z")
               for i in range(5)]
    store(api, "prefix only", [f"{tag}:child"])
    extra = store(api, "other tag", [other])
    first = api.get("/memory/by-tag", params={"tags": tag, "limit": 2}).json()
    assert first["count"] == 2 and first["has_more"] is True and first["next_offset"] == 2
    assert [m["id"] for m in first["memories"]] == created[::-1][:2]  # newest first
    last = api.get("/memory/by-tag", params={"tags": tag, "limit": 2, "offset": 4}).json()
    assert last["count"] == 1 and last["has_more"] is False and "next_offset" not in last
    both = api.get("/memory/by-tag", params={"tags": f"{tag},{other}", "limit": 200}).json()
    assert {m["id"] for m in both["memories"]} == {*created, extra}
    assert api.get("/memory/by-tag", params={"tags": tag, "limit": 5000}).json()["limit"] == 200
    for params in ({}, {"tags": tag, "tag_match": "prefix"}, {"tags": tag, "tag_mode": "all"}, {"tags": tag, "offset": -1}):
        response = api.get("/memory/by-tag", params=params)
        assert response.status_code == 400 and response.json()["status"] == "error"


# --- /memories/{id}/related ------------------------------------------------------------------
def test_related_depth_types_and_errors(api, stack):
    tag = scope()
    a, b, c, d = (store(api, f"related node {n}", [tag]) for n in "abcd")
    link(stack, a, b, "RELATES_TO", 0.7)
    link(stack, b, c, "LEADS_TO", 0.6)
    link(stack, a, d, "SIMILAR_TO", 0.9)
    one = api.get(f"/memories/{a}/related").json()
    assert [m["id"] for m in one["related_memories"]] == [b] and one["related_memories"][0]["relation_type"] == "RELATES_TO"
    two = api.get(f"/memories/{a}/related", params={"max_depth": 2}).json()
    assert {m["id"]: m["depth"] for m in two["related_memories"]} == {b: 1, c: 2}
    similar = api.get(f"/memories/{a}/related", params={"relationship_types": "similar_to"}).json()
    assert [m["id"] for m in similar["related_memories"]] == [d]
    assert api.get(f"/memories/{a}/related", params={"max_depth": 4}).status_code == 400
    bogus = api.get(f"/memories/{a}/related", params={"relationship_types": "KNOWS) DELETE (x"})
    assert bogus.status_code == 400 and "relationship_types" in bogus.json()["message"]
    assert api.get(f"/memories/{uuid.uuid4()}/related").status_code == 404


# --- /startup-recall and /analyze -------------------------------------------------------------
def test_startup_recall_and_analyze(api):
    lesson = store(api, "Never deploy on Fridays", ["critical", "lesson"], importance=0.95)
    rule = store(api, "Always recall before answering", ["system"], importance=0.9)
    store(api, "I prefer dark mode in every editor", ["ui"], type="Preference", importance=0.8, confidence=0.9)
    startup = api.get("/startup-recall").json()
    assert lesson in [m["id"] for m in startup["critical_lessons"]]
    assert rule in [m["id"] for m in startup["system_rules"]] and startup["has_critical"] is True
    analytics = api.get("/analyze").json()["analytics"]
    assert analytics["memory_types"]["Preference"] >= 1 and analytics["total_memories"] >= 3
    assert any(p["content"].startswith("I prefer dark mode") for p in analytics["preferences"])
    assert analytics["confidence_distribution"]["high"] >= 1 and analytics["temporal_insights"]["by_month"]


# --- degradation (the spec's table) -------------------------------------------------------------
def test_graph_outage_answers_vector_results(tmp_path, servers):
    graph = RedisServer("graph-recall-outage", free_port(), tmp_path / "graph", with_falkordb=True)
    graph.start()
    stack = Stack.create(servers, graph_port=graph.port)
    try:
        stack.start_web()
        stack.start_worker()
        with stack.client() as api:
            memory_id = store(api, "graph outage vector recall", ["outage-recall"])
            graph.stop()
            response = api.get("/recall", params={"query": "graph outage vector", "expand_relations": "true"})
            assert response.status_code == 200, response.text
            body = response.json()
            assert [r["id"] for r in body["results"]] == [memory_id]
            assert body["results"][0]["match_type"] == "vector" and body["state_filter"]["graph_checked"] is False
    finally:
        stack.stop()
        graph.stop()


class _FailingVectors:
    backend = "down"

    def search(self, query):
        raise ConnectionError("qdrant unreachable")


class _FailingEmbedder:
    name, dimensions, semantic = "openai", 384, True

    def embed(self, texts):
        raise TimeoutError("provider timed out")


@pytest.fixture()
def graph_with_memories(servers):
    graph = GraphStore(FalkorDB(host="127.0.0.1", port=servers.graph.port), f"degraded_{uuid.uuid4().hex[:8]}")
    graph.ensure_schema()
    records = [build_new_record({"content": text, "tags": ["deg"], "type": "Context"}, Limits.from_settings(Settings(), vector_size=384))
               for text in ("postgres failover runbook", "lunch order for friday")]
    graph.upsert_memories(records)
    return graph, records


def test_vector_outage_answers_from_the_graph(graph_with_memories):
    graph, records = graph_with_memories
    engine = RecallEngine(Settings(), lambda: graph, lambda: _FailingVectors(), lambda: HashEmbedder())
    body = engine.recall(RecallRequest(query="postgres failover", limit=5))
    assert [r["id"] for r in body["results"]] == [records[0].id]
    assert body["results"][0]["match_type"] == "keyword"
    assert body["vector_search"]["enabled"] is False and body["vector_search"]["error"] == "ConnectionError"


def test_embedder_failure_falls_back_to_a_flagged_placeholder(graph_with_memories):
    graph, records = graph_with_memories

    class Vectors(_FailingVectors):
        def search(self, query):
            assert len(query.vector) == 384
            return []

    engine = RecallEngine(Settings(), lambda: graph, lambda: Vectors(), lambda: _FailingEmbedder(), dimensions=lambda: 384)
    body = engine.recall(RecallRequest(query="postgres failover", limit=5))
    assert body["vector_search"]["embedding_fallback"] is True and body["vector_search"]["semantic"] is False
    assert [r["id"] for r in body["results"]] == [records[0].id]
