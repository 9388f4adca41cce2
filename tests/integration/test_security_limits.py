"""Issue 22's hostile requests against the real stack: each a clear 4xx or a full answer, within 1 s.

The unit module (tests/unit/test_security_limits.py) proves each bound in isolation; this one
proves the stores never see the unbounded work: the graph, Qdrant Edge, the embedder and the
MCP endpoint all in the loop, and a second web process on the same Edge shard refused.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
import time
import uuid

import pytest

from ops.redis_servers import free_port
from tests.graph_helpers import stack_graph
from tests.integration.test_mcp import mcp_session
from ops.bench.stack import ADMIN_TOKEN, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.security]

LIMIT_S = 1.0
CLIQUE = 110  # the walk of every path took 2.1 s over 121 members, 0.3 s over 61
HOPS_NOT_PATHS_RATIO = 6  # three hops over the clique against one: ~2x when walked by hops, >50x by paths


def timed(api, method: str, path: str, **kwargs):
    """The answer and how long it took; a slow one is sent again once (a busy machine can pause one)."""
    for _ in range(2):
        started = time.perf_counter()
        response = api.request(method, path, **kwargs)
        took = time.perf_counter() - started
        if took <= LIMIT_S:
            break
    assert response.status_code < 500, response.text
    return response, took


def refused(response, status: int, *fragments: str) -> None:
    body = response.json()
    assert response.status_code == status and body["status"] == "error" and body["code"] == status, body
    assert all(f in body["message"] for f in fragments), body["message"]


@pytest.fixture(scope="module")
def clique(stack):
    """CLIQUE memories each linked to every other: over a million paths of three hops from any one."""
    with stack.client() as api:
        return _make_clique(stack, api)


def _make_clique(stack, api):
    tag = f"clique-{uuid.uuid4().hex[:8]}"
    response = api.post("/memory/batch", json={"memories": [{"content": f"clique member {i} about billing",
                                                             "tags": [tag]} for i in range(CLIQUE)]})
    assert response.status_code in (201, 202), response.text
    ids = [item["memory_id"] for item in response.json()["results"]]
    wait_until(lambda: api.get("/memory/by-tag", params={"tags": tag, "limit": 200}).json()["count"] >= CLIQUE,
               timeout=30, interval=0.2, message="clique persisted")
    stack_graph(stack).query(
        "UNWIND $ids AS a UNWIND $ids AS b WITH a, b WHERE a < b "
        "MATCH (x:Memory {id: a}), (y:Memory {id: b}) CREATE (x)-[:RELATES_TO {strength: 0.5}]->(y)", {"ids": ids})
    # the members' enrichment writes to the graph: time the reads after it, not beside it
    wait_until(lambda: api.get("/enrichment/status").json()["pending"] == 0, timeout=120, interval=0.2,
               message="clique enriched")
    return ids, tag


def test_time_query_that_recursed_is_a_400_and_one_at_the_limit_answers(api):
    response, took = timed(api, "GET", "/recall", params={"query": "billing", "time_query": "since " * 1200})
    refused(response, 400, "time_query", "limit of 200")
    for unit in ("since ", "from ", "between a and "):
        response, took = timed(api, "GET", "/recall", params={"query": "billing", "time_query": (unit * 50)[:200]})
        assert response.status_code == 200 and took <= LIMIT_S, (unit, took)


def test_queries_past_the_cap_are_refused_and_the_cap_answers_within_the_limit(api, clique):
    response, _ = timed(api, "GET", "/recall", params=[("queries", f"billing {i}") for i in range(11)])
    refused(response, 400, "queries", "limit of 10")
    words = " ".join(f"billing{i}" for i in range(300))[:1995]
    params = [("queries", f"{i} {words}") for i in range(10)] + [
        ("limit", "100"), ("per_query_limit", "50"), ("expand_relations", "true"), ("relation_limit", "200"),
        ("expansion_limit", "500"), ("expand_entities", "true"), ("tags", clique[1])]
    response, took = timed(api, "GET", "/recall", params=params)
    assert response.status_code == 200 and took <= LIMIT_S, took


def test_related_on_a_clique_walks_hops_not_paths(api, clique):
    """Three hops cost about one: every member is reached at the first, the second reads their links once.

    Compared with one hop in the same run rather than with a wall-clock figure, so that a slower
    machine does not fail it; walking every path would make three hops tens of times dearer.
    """
    ids, _ = clique

    def fastest_of_three(max_depth: int):
        answers = [timed(api, "GET", f"/memories/{ids[0]}/related", params={"max_depth": max_depth, "limit": 200})
                   for _ in range(3)]
        return answers[-1][0], min(took for _, took in answers)

    one_hop, one_hop_took = fastest_of_three(1)
    three_hops, three_hops_took = fastest_of_three(3)
    assert one_hop.status_code == 200 and three_hops.status_code == 200, three_hops.text
    assert three_hops_took <= HOPS_NOT_PATHS_RATIO * one_hop_took, (three_hops_took, one_hop_took)
    related = three_hops.json()["related_memories"]
    assert len(related) == CLIQUE - 1 and {r["depth"] for r in related} == {1}
    assert {r["id"] for r in related} == {r["id"] for r in one_hop.json()["related_memories"]}


def test_recall_hydrating_a_densely_linked_seed_answers_within_the_limit(api, clique):
    response, took = timed(api, "GET", "/recall", params={"query": "clique member billing", "tags": clique[1],
                                                          "limit": 100, "expand_relations": "true",
                                                          "relation_limit": 200, "expansion_limit": 500})
    assert response.status_code == 200 and took <= LIMIT_S, took


def test_an_oversized_control_body_is_refused(api):
    big = b"{" + b" " * (1_048_576 + 1) + b"}"
    json_body = {"Content-Type": "application/json"}
    refused(api.post("/consolidate", content=big, headers=json_body), 413, "body")
    refused(api.post("/admin/sync", content=big, headers={"X-Admin-Token": ADMIN_TOKEN, **json_body}), 413, "body")


@pytest.mark.parametrize("target", ["/recall?query=café".encode(), b"/recall?query=" + b"a" * 70_000],
                         ids=["raw bytes outside ASCII", "a request line past the parser's limit"])
def test_a_request_the_http_parser_refuses_is_answered_in_the_error_envelope(stack, target):
    """uvicorn answers these itself, before the app: the web's protocol (api.http_protocol)
    puts that 400 in AutoMem's envelope too (Schemathesis found the plain-text one)."""
    with socket.create_connection(("127.0.0.1", stack.port), timeout=10) as conn:
        conn.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: mempipe\r\n\r\n")
        answer = b""
        while chunk := conn.recv(65536):  # the server closes the connection after it
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ") and b"content-type: application/json" in head.lower(), head
    refusal = json.loads(body)
    assert refusal["status"] == "error" and refusal["code"] == 400 and "percent-encoded" in refusal["message"], refusal


def test_mcp_recall_returns_the_refusal_as_a_tool_error(stack):
    async def main():
        async with mcp_session(f"{stack.url}/mcp") as session:
            return await session.call_tool("recall_memory", {"time_query": "since " * 1200})

    result = asyncio.run(main())
    assert result.is_error is True
    assert result.content[0].text.startswith("400: time_query:") and "limit of 200" in result.content[0].text


def test_a_second_web_process_on_the_same_edge_shard_is_refused_by_name(stack):
    second = dataclasses.replace(stack, port=free_port(), web=None, workers=[])
    with pytest.raises(RuntimeError) as failed:
        second.start_web(timeout=60)
    assert "ShardInUse" in str(failed.value) and "QDRANT_URL" in str(failed.value), str(failed.value)[-2000:]
    with stack.client() as api:  # the owner serves on
        assert api.get("/health").status_code == 200


def test_an_edge_owner_elsewhere_on_the_same_broker_is_refused_by_name(stack, tmp_path):
    """Another machine would open a shard of its own: here, another data directory on the same broker."""
    elsewhere = dataclasses.replace(stack, port=free_port(), data_dir=tmp_path, web=None, workers=[])
    with pytest.raises(RuntimeError) as failed:
        elsewhere.start_web(timeout=60)
    message = str(failed.value)
    assert "ShardInUse" in message and "already owned by pid" in message and str(stack.data_dir) in message, message[-2000:]
    with stack.client() as api:
        assert api.get("/health").status_code == 200


def test_falkordb_stops_a_read_at_the_time_limit_and_it_is_named(servers):
    from falkordb import FalkorDB

    from pipeline.graph import GraphQueryTimeout, GraphStore

    graph = GraphStore(FalkorDB(host="127.0.0.1", port=servers.graph.port), f"timeout_{uuid.uuid4().hex[:8]}",
                       read_timeout_ms=200)
    # FalkorDB checks the limit as it traverses: a path enumeration over a clique takes seconds
    graph.run_write("UNWIND range(1, 120) AS i CREATE (:Memory {id: toString(i)})")
    graph.run_write("MATCH (a:Memory), (b:Memory) WHERE a.id < b.id CREATE (a)-[:RELATES_TO]->(b)")
    started = time.perf_counter()
    with pytest.raises(GraphQueryTimeout, match="200 ms .FALKORDB_QUERY_TIMEOUT_MS"):
        graph.read("MATCH p = (a:Memory {id: '1'})-[*1..3]-(b:Memory) RETURN count(p)")
    assert time.perf_counter() - started < 2  # stopped on the server, not left to the 10 s socket timeout


def test_a_related_hop_starts_from_the_frontier_never_from_every_memory(servers):
    """The walk's cost must not grow with the store: each hop looks its frontier up by id and
    follows their relationships (the filter on the far end once made FalkorDB scan every memory)."""
    from falkordb import FalkorDB

    from pipeline.graph import GraphStore
    from pipeline.relationships import _HOP, related
    from pipeline.relations import pattern

    name = f"hops_{uuid.uuid4().hex[:8]}"
    client = FalkorDB(host="127.0.0.1", port=servers.graph.port)
    graph = GraphStore(client, name)
    graph.ensure_schema()
    graph.run_write("UNWIND range(1, 2000) AS i CREATE (:Memory {id: 'other' + toString(i)})")
    graph.run_write("UNWIND range(1, 40) AS i CREATE (:Memory {id: 'member' + toString(i)})")
    graph.run_write("MATCH (a:Memory), (b:Memory) WHERE a.id STARTS WITH 'member' AND b.id STARTS WITH 'member' "
                    "AND a.id < b.id CREATE (a)-[:RELATES_TO {strength: 0.5}]->(b)")
    types = ["RELATES_TO", "SIMILAR_TO"]
    plan = str(client.select_graph(name).explain(_HOP.format(types=pattern(types)),
                                                 {"frontier": ["member1"], "seen": ["member1"], "per_hop": 10, "room": 10}))
    assert "Node By Index Scan | (v:Memory)" in plan and "Label Scan" not in plan, plan
    found = related(graph, "member1", types, max_depth=3, limit=200)
    assert len(found) == 39 and {r["depth"] for r in found} == {1}
