"""Every parameter a caller controls is bounded: past its limit, a 400/413 naming it; within it, fast.

One test per class of hostile input (issue 22): long and nested time_query, too many or too long
queries, long query text, long tag/type/id lists and values, context hints, full-text terms,
/related path enumeration, relation hydration, graph query time limits, unread oversized control
bodies, a second owner of the Edge shard, and MCP reporting the same refusal as a tool error.
The real-stack counterpart (the same requests against the stores, answered within 1 s) is
tests/integration/test_security_limits.py.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import mcp_types as types
import pytest
from fastapi.testclient import TestClient
from redis.exceptions import ResponseError
from starlette.requests import Request

from api.app import create_app
from api.mcp.rest import RestClient
from api.mcp.server import McpEndpoint
from pipeline.config import Settings
from pipeline.graph import GraphQueryTimeout, GraphStore
from pipeline.limits import BACKGROUND_QUERY_TIMEOUT_MS, FULLTEXT_MAX_TERMS, HINT_MAX_CHARS, TIME_QUERY_MAX_CHARS
from pipeline.query.graph_reads import neighbours
from pipeline.query.keywords import extract_keywords, fulltext_terms
from pipeline.query.timewindow import parse_time_query
from pipeline.relationships import related
from pipeline.vectors import shard_lock

pytestmark = pytest.mark.security  # pytest -m security: the security suite (docs/testing.md)

TOKEN, ADMIN = "api-token", "admin-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SETTINGS = Settings(automem_api_token=TOKEN, admin_api_token=ADMIN)


class _Engine:
    """Stands in for the recall engine: records what parse_recall let through."""

    def __init__(self):
        self.requests = []

    def recall(self, request):
        self.requests.append(request)
        return {"status": "success", "results": [], "count": 0}


def _app(settings: Settings = SETTINGS):
    app = create_app(settings)
    # No lifespan: the routes under test refuse (or answer from the fake engine) before any store.
    app.state.settings = settings
    app.state.services = SimpleNamespace(settings=settings, vector_size=8)
    app.state.engine = _Engine()
    return app


@pytest.fixture(scope="module")
def client():
    return TestClient(_app(), raise_server_exceptions=False)


def _refused(response, status: int, *fragments: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["status"] == "error" and body["code"] == status, body
    for fragment in fragments:
        assert fragment in body["message"], body["message"]
    return body["message"]


# --- time_query ---------------------------------------------------------------------------------
def test_time_query_past_its_limit_is_a_400_naming_it(client):
    response = client.get("/recall", params={"time_query": "since " * 1200}, headers=AUTH)
    _refused(response, 400, "time_query", f"limit of {TIME_QUERY_MAX_CHARS}")
    ok = client.get("/recall", params={"time_query": ("since " * 40)[:TIME_QUERY_MAX_CHARS]}, headers=AUTH)
    assert ok.status_code == 200, ok.text


@pytest.mark.parametrize("unit", ["since ", "from ", "before ", "between a and ", "from x to ", "1 ", "march "])
def test_a_time_query_at_its_limit_parses_quickly_whatever_it_nests(unit, monkeypatch):
    import dateparser

    from pipeline.query import timewindow

    text = (unit * TIME_QUERY_MAX_CHARS)[:TIME_QUERY_MAX_CHARS]
    calls = []
    parse = dateparser.parse
    monkeypatch.setattr(timewindow.dateparser, "parse", lambda *args, **kwargs: calls.append(args) or parse(*args, **kwargs))
    parse_time_query(text)  # no RecursionError
    # What keeps it quick: a few dateparser calls (one connective deep), not one per word; a
    # wall-clock bound here failed on a busy machine.
    assert len(calls) <= 5, len(calls)


def test_nesting_is_bounded_but_one_connective_still_reads_its_phrases():
    assert parse_time_query("since march") is not None
    window = parse_time_query("between last week and yesterday")
    assert window is not None and window.start < window.end
    assert parse_time_query("since since march") is None  # a connective around a connective: ignored


# --- queries and query text ------------------------------------------------------------------------
def test_queries_past_the_count_or_length_limit_are_400s(client):
    many = [("queries", f"topic {i}") for i in range(SETTINGS.recall_max_queries + 1)]
    _refused(client.get("/recall", params=many, headers=AUTH), 400, "queries", f"limit of {SETTINGS.recall_max_queries}")
    long = [("queries", "x" * (SETTINGS.recall_max_query_chars + 1))]
    _refused(client.get("/recall", params=long, headers=AUTH), 400, "queries", f"limit of {SETTINGS.recall_max_query_chars}")
    at_limit = [("queries", f"topic {i}") for i in range(SETTINGS.recall_max_queries)]
    assert client.get("/recall", params=at_limit, headers=AUTH).status_code == 200


def test_query_text_past_its_limit_is_a_400(client):
    response = client.get("/recall", params={"query": "word " * 1000}, headers=AUTH)
    _refused(response, 400, "query:", f"limit of {SETTINGS.recall_max_query_chars}")


def test_the_limits_are_settings(client):
    settings = Settings(automem_api_token=TOKEN, recall_max_queries=2, recall_max_list_items=3)
    small = TestClient(_app(settings), raise_server_exceptions=False)
    _refused(small.get("/recall", params=[("queries", "a"), ("queries", "b"), ("queries", "c")], headers=AUTH),
             400, "limit of 2")
    _refused(small.get("/recall", params={"tags": "a,b,c,d"}, headers=AUTH), 400, "tags", "limit of 3")


# --- lists and hints ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["tags", "exclude_tags", "context_tags", "context_types", "priority_ids"])
def test_list_parameters_are_bounded_in_count_and_item_length(client, name):
    count = SETTINGS.recall_max_list_items + 1
    _refused(client.get("/recall", params={name: ",".join(f"t{i}" for i in range(count))}, headers=AUTH),
             400, name, f"limit of {SETTINGS.recall_max_list_items}")
    item_limit = HINT_MAX_CHARS if name == "priority_ids" else SETTINGS.max_tag_length
    _refused(client.get("/recall", params={name: "t" * (item_limit + 1)}, headers=AUTH), 400, name, f"limit of {item_limit}")


@pytest.mark.parametrize("name", ["context", "language", "active_path"])
def test_context_hints_are_bounded(client, name):
    _refused(client.get("/recall", params={name: "h" * (HINT_MAX_CHARS + 1)}, headers=AUTH), 400, name)


def test_by_tag_listing_and_deletion_bound_their_tags(client):
    tags = ",".join(f"t{i}" for i in range(SETTINGS.recall_max_list_items + 1))
    _refused(client.get("/memory/by-tag", params={"tags": tags}, headers=AUTH), 400, "tags", "limit of")
    _refused(client.delete("/memory/by-tag", params={"tags": tags}, headers=AUTH), 400, "tags", "limit of")


def test_fulltext_terms_are_the_first_ones_up_to_the_cap():
    keywords = extract_keywords(" ".join(f"word{i}" for i in range(500)))
    terms = fulltext_terms(keywords)
    assert terms == [f"word{i}" for i in range(FULLTEXT_MAX_TERMS)]


# --- graph reads ---------------------------------------------------------------------------------
class _Node:
    def __init__(self, memory_id):
        self.properties = {"id": memory_id, "content": memory_id}


class _RecordingGraph:
    """A graph whose every node has ``fanout`` fresh neighbours; records each read."""

    def __init__(self, fanout: int = 50):
        self.fanout = fanout
        self.reads = []

    def read(self, cypher, params):
        self.reads.append((cypher, params))
        if "frontier" in params:  # one hop of /related
            rows = [(_Node(f"{f}/{i}"), {"type": "RELATES_TO", "strength": 0.5, "updated_at": None, "outgoing": True,
                                         "via": f}) for f in params["frontier"] for i in range(self.fanout)]
            return rows[:params["room"]]
        return [(seed, [["RELATES_TO", 0.5, True, None, f"{seed}-n{i}"] for i in range(params["per_seed"])])
                for seed in params["ids"]]

    def recall_memories(self, ids):
        self.reads.append(("recall_memories", {"ids": ids}))
        return {i: {"id": i} for i in ids}


def test_related_walks_breadth_first_one_bounded_read_per_hop():
    graph = _RecordingGraph(fanout=3)
    rows = related(graph, "seed", ["RELATES_TO"], 3, limit=200)
    assert len(graph.reads) == 3  # one read per hop, never one variable-length path match
    for cypher, params in graph.reads:
        assert "*" not in cypher and params["per_hop"] > 0 and "seed" in params["seen"]
    assert [r["depth"] for r in rows] == [1] * 3 + [2] * 9 + [3] * 27
    assert all(r["via"] for r in rows)


def test_related_stops_reading_once_the_limit_is_found():
    graph = _RecordingGraph(fanout=50)
    rows = related(graph, "seed", ["RELATES_TO"], 3, limit=20)
    assert len(rows) == 20 and len(graph.reads) == 1 and graph.reads[0][1]["room"] == 20


def test_relation_hydration_ranks_ids_and_loads_only_the_edges_kept():
    graph = _RecordingGraph()
    found = neighbours(graph, ["a", "b"], per_seed=3, with_memories=True)
    cypher = graph.reads[0][0]
    assert "collect([type(r), r.strength, outgoing, r.updated_at, o.id])" in cypher  # no projection before the slice
    assert graph.reads[1] == ("recall_memories", {"ids": sorted(f"{s}-n{i}" for s in "ab" for i in range(3))})
    assert [e.memory["id"] for e in found["a"]] == ["a-n0", "a-n1", "a-n2"]


class _TimingClient:
    """A FalkorDB client stand-in: records the timeout of each read, or times out."""

    def __init__(self, time_out: bool = False):
        self.time_out = time_out
        self.timeouts = []

    def select_graph(self, name):
        return self

    def ro_query(self, cypher, params, timeout=None):
        self.timeouts.append(timeout)
        if self.time_out:
            raise ResponseError("Query timed out")
        return SimpleNamespace(result_set=[])


def test_graph_reads_carry_a_server_side_time_limit():
    client = _TimingClient()
    store = GraphStore(client, "g", read_timeout_ms=SETTINGS.falkordb_query_timeout_ms)
    store.read("MATCH (m) RETURN m")
    store.run_read("MATCH (m) RETURN m")
    assert client.timeouts == [SETTINGS.falkordb_query_timeout_ms, BACKGROUND_QUERY_TIMEOUT_MS]


def test_a_graph_read_past_its_limit_is_a_503_naming_the_setting():
    store = GraphStore(_TimingClient(time_out=True), "g", read_timeout_ms=1234)
    with pytest.raises(GraphQueryTimeout, match="1234 ms .FALKORDB_QUERY_TIMEOUT_MS") as caught:
        store.read("MATCH (m) RETURN m")
    assert caught.value.status_code == 503


def test_connect_passes_the_setting(monkeypatch):
    import pipeline.graph as graph_module

    monkeypatch.setattr(graph_module, "FalkorDB", lambda **kwargs: _TimingClient())
    store = GraphStore.connect(Settings(falkordb_query_timeout_ms=2500))
    store.read("RETURN 1")
    assert store._client.timeouts == [2500]


# --- bodies ------------------------------------------------------------------------------------
@pytest.mark.parametrize("path, headers", [("/consolidate", AUTH), ("/admin/sync", {**AUTH, "X-Admin-Token": ADMIN}),
                                           ("/admin/reembed", {**AUTH, "X-Admin-Token": ADMIN}),
                                           ("/admin/deadletters/replay", {**AUTH, "X-Admin-Token": ADMIN})])
def test_control_bodies_are_size_checked_before_they_are_read(client, path, headers):
    limit = SETTINGS.max_request_bytes
    declared = client.post(path, content=b"{" + b" " * limit + b"}", headers={**headers, "Content-Type": "application/json"})
    _refused(declared, 413, "body", f"limit of {limit}")


def test_a_streamed_control_body_is_refused_at_the_limit_not_read_to_its_end():
    from api.body import optional_json
    from pipeline.errors import PayloadTooLarge

    limit, chunk, received = 1000, b" " * 300, []

    async def receive():  # no Content-Length: only counting tells the reader when to stop
        received.append(1)
        return {"type": "http.request", "body": chunk, "more_body": len(received) < 100}

    request = Request({"type": "http", "method": "POST", "path": "/consolidate", "headers": []}, receive)
    with pytest.raises(PayloadTooLarge, match="limit of 1000"):
        asyncio.run(optional_json(request, limit))
    assert len(received) == 4  # 1200 bytes read of the 30,000 offered


# --- the Edge shard's owner ---------------------------------------------------------------------------
def test_a_second_process_cannot_open_an_owned_shard(tmp_path):
    shard = str(tmp_path / "qdrant-edge" / "memories")
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from pipeline.vectors import shard_lock
        shard_lock.acquire({shard!r})
        print("held", flush=True)
        sys.stdin.read()
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(shard_lock.ShardInUse, match=rf"pid {holder.pid} .*QDRANT_URL"):
            shard_lock.acquire(shard)
    finally:
        holder.stdin.close()
        holder.wait(10)
    shard_lock.acquire(shard)  # the owner's exit released it
    shard_lock.acquire(shard)  # and the owning process may hold it more than once
    shard_lock.release(shard)
    shard_lock.release(shard)


# --- MCP --------------------------------------------------------------------------------------------
def _call_tool(name: str, arguments: dict) -> types.CallToolResult:
    app = _app()
    endpoint = McpEndpoint(SETTINGS, app)

    async def run():
        endpoint._rest = RestClient(app)
        request = Request({"type": "http", "method": "POST", "path": "/mcp", "query_string": b"",
                           "headers": [(b"authorization", f"Bearer {TOKEN}".encode())]})
        try:
            return await endpoint._call_tool(SimpleNamespace(request=request),
                                             types.CallToolRequestParams(name=name, arguments=arguments))
        finally:
            await endpoint._rest.aclose()

    return asyncio.run(run())


@pytest.mark.parametrize("arguments, fragment", [
    ({"time_query": ("since " * 1200).strip()}, f"time_query: 7199 characters exceeds the limit of {TIME_QUERY_MAX_CHARS}"),
    ({"queries": [f"q{i}" for i in range(50)]}, f"queries: 50 values exceeds the limit of {SETTINGS.recall_max_queries}"),
    ({"tags": [f"t{i}" for i in range(500)]}, f"tags: 500 values exceeds the limit of {SETTINGS.recall_max_list_items}"),
])
def test_mcp_recall_reports_the_same_refusal_as_a_tool_error(arguments, fragment):
    result = _call_tool("recall_memory", arguments)
    assert result.is_error is True
    assert result.content[0].text == f"400: {fragment}"


# --- the contract ---------------------------------------------------------------------------------
def test_openapi_states_the_limits():
    schema = {p["name"]: p for p in TestClient(_app()).get("/openapi.json", headers=AUTH).json()["paths"]["/recall"]["get"]["parameters"]}
    assert schema["time_query"]["schema"]["maxLength"] == TIME_QUERY_MAX_CHARS
    assert schema["queries"]["schema"]["maxItems"] == SETTINGS.recall_max_queries
    assert schema["tags"]["schema"]["maxItems"] == SETTINGS.recall_max_list_items
    assert schema["query"]["schema"]["maxLength"] == SETTINGS.recall_max_query_chars
    assert "200 characters" in schema["time_query"]["description"]


def test_limits_do_not_cut_what_the_spec_allows(client):
    """AutoMem's maxima: limit 1-200 (clamped to RECALL_MAX_LIMIT), relation_limit 200, expansion_limit 500,
    per_query_limit 50; the defaults of every limit here sit above what the spec's own examples send."""
    params = {"query": "q", "limit": 200, "relation_limit": 200, "expansion_limit": 500, "per_query_limit": 50,
              "time_query": "between last march and yesterday"}
    assert client.get("/recall", params=params, headers=AUTH).status_code == 200
    assert SETTINGS.recall_max_list_items >= SETTINGS.max_tags  # any stored memory's tags can be asked for


def test_the_fuzzers_hostile_values_hold_the_case_random_generation_missed():
    from ops.bench.fuzz import hostile_values

    unbounded = [value for _, value in hostile_values({"type": "string"})]
    assert ("since " * 1200)[:7200] in unbounded  # the time_query that recursed into a 500
    bounded = {len(value) for _, value in hostile_values({"type": "string", "maxLength": 200})}
    assert {200, 201} <= bounded
    counts = {len(value) for _, value in hostile_values({"type": "array", "maxItems": 10, "items": {"type": "string"}})}
    assert {10, 11, 500} <= counts
    assert hostile_values({"type": "string", "enum": ["a"]}) == [] and hostile_values({"type": "integer"}) == []


def test_a_live_owner_on_another_host_refuses_a_second_edge_owner(tmp_path, monkeypatch):
    import json

    import fakeredis

    from pipeline.vectors import edge_owner

    broker = fakeredis.FakeRedis()
    path = str(tmp_path / "qdrant-edge" / "memories")
    broker.set(edge_owner.KEY.format(collection="memories"),
               json.dumps({"host": "web-2", "path": path, "pid": 7, "since": "2026-12-03T05:00:00+00:00"}), ex=30)
    with pytest.raises(shard_lock.ShardInUse, match=r"pid 7 on host web-2 .*QDRANT_URL"):
        edge_owner.OwnerRecord(broker, "memories", path).claim()

    # the same host and shard path holds the file lock, so the record's writer is gone: take it over
    monkeypatch.setattr(edge_owner.socket, "gethostname", lambda: "web-2")
    record = edge_owner.OwnerRecord(broker, "memories", path)
    record.claim()
    owner = json.loads(broker.get(edge_owner.KEY.format(collection="memories")))
    assert owner["pid"] == __import__("os").getpid() and 0 < broker.ttl(edge_owner.KEY.format(collection="memories")) <= 30
    record.release()
    assert broker.get(edge_owner.KEY.format(collection="memories")) is None  # a clean close frees it at once


def test_without_the_broker_the_owner_record_is_skipped_not_fatal(tmp_path):
    import redis

    from pipeline.vectors import edge_owner

    class Down:
        def __getattr__(self, name):
            def fail(*args, **kwargs):
                raise redis.ConnectionError("down")
            return fail

    record = edge_owner.OwnerRecord(Down(), "memories", str(tmp_path / "shard"))
    record.claim()  # warns; the shard's file lock still guards the machine
    record.release()
