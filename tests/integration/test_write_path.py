"""Store → persisted → embedded → recalled, over the real stack."""

from __future__ import annotations

import uuid

import httpx
import pytest

from ops.bench.stack import ADMIN_TOKEN, API_TOKEN, AUTH, wait_until
from pipeline.stages import HOT_QUEUES, PERSIST_QUEUE
from tests.queues import consumers_waiting, held_message_ids

pytestmark = pytest.mark.integration


def scope() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


def recall_ids(api: httpx.Client, **params) -> list[str]:
    response = api.get("/recall", params=params)
    assert response.status_code == 200, response.text
    return [r["id"] for r in response.json()["results"]]


def test_store_waits_until_recallable_then_fetch_and_recall(api):
    tag = scope()
    response = api.post("/memory", json={
        "content": "We decided to use PostgreSQL for the primary database",
        "tags": [tag, f"{tag}:db"], "importance": 0.9, "metadata": {"source": "test"},
    })
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["status"] == "success" and body["state"] == "recallable"
    memory_id = body["memory_id"]

    fetched = api.get(f"/memory/{memory_id}").json()
    assert fetched["status"] == "success"
    memory = fetched["memory"]
    assert memory["content"].startswith("We decided")
    assert memory["type"] == "Decision"  # classified by the pipeline: no type was given
    assert memory["tag_prefixes"] == [tag, f"{tag}:db"]
    # Background enrichment may already have added its "entities" key next to the caller's metadata.
    assert memory["metadata"]["source"] == "test" and set(memory["metadata"]) <= {"source", "entities"}

    recalled = api.get("/recall", params={"query": "postgresql database", "tags": tag}).json()
    assert recalled["count"] == 1
    top = recalled["results"][0]
    assert top["id"] == memory_id and top["match_type"] == "vector"
    assert top["score_components"]["keyword"] == 1.0
    assert recalled["vector_search"] == {"enabled": True, "matched": True}
    assert recalled["tag_scope"]["filtered"] is True
    assert "query_time_ms" in recalled


def test_fire_and_forget_answers_202_then_lands(api):
    tag = scope()
    response = api.post("/memory", params={"wait": "false"}, json={"content": "queued note", "tags": [tag]})
    assert response.status_code == 202
    assert response.json()["state"] == "queued"
    memory_id = response.json()["memory_id"]
    wait_until(lambda: api.get(f"/memory/{memory_id}").status_code == 200, message="memory persisted")
    wait_until(lambda: memory_id in recall_ids(api, query="queued note", tags=tag), message="memory recallable")


def test_tag_scope_prefix_exact_and_all(api):
    tag = scope()
    a = api.post("/memory", json={"content": "alpha one", "tags": [f"{tag}:slack:channel:general"]}).json()["memory_id"]
    b = api.post("/memory", json={"content": "alpha two", "tags": [f"{tag}:slack:user:U1", f"{tag}:other"]}).json()["memory_id"]
    assert set(recall_ids(api, query="alpha", tags=f"{tag}:slack", limit=10)) == {a, b}
    assert recall_ids(api, query="alpha", tags=f"{tag}:slack", tag_match="exact") == []
    assert recall_ids(api, query="alpha", tags=f"{tag}:SLACK:channel:general", tag_match="exact") == [a]
    assert recall_ids(api, query="alpha", tags=[f"{tag}:slack", f"{tag}:other"], tag_mode="all") == [b]
    # no query: trending within scope, most important first
    trending = api.get("/recall", params={"tags": tag}).json()
    assert {r["match_type"] for r in trending["results"]} == {"trending"}
    assert trending["count"] == 2


def test_update_re_embeds_and_delete_removes_from_both_stores(api):
    tag = scope()
    memory_id = api.post("/memory", json={"content": "the build uses make", "tags": [tag]}).json()["memory_id"]
    response = api.patch(f"/memory/{memory_id}", json={"content": "the build uses bazel now", "importance": 0.8})
    assert response.status_code == 200, response.text
    assert response.json()["state"] == "updated"
    memory = api.get(f"/memory/{memory_id}").json()["memory"]
    assert memory["content"] == "the build uses bazel now" and memory["importance"] == 0.8
    hits = api.get("/recall", params={"query": "bazel", "tags": tag}).json()["results"]
    assert hits[0]["id"] == memory_id and hits[0]["match_type"] == "vector"
    assert hits[0]["memory"]["content"] == "the build uses bazel now"  # the vector payload followed too

    before = api.get("/health").json()["vector_count"]
    assert api.delete(f"/memory/{memory_id}").status_code == 200
    assert api.get(f"/memory/{memory_id}").status_code == 404
    assert recall_ids(api, query="bazel", tags=tag) == []
    assert api.get("/health").json()["vector_count"] == before - 1
    assert api.delete(f"/memory/{memory_id}").status_code == 404
    assert api.patch(f"/memory/{memory_id}", json={"importance": 0.1}).status_code == 404


def test_client_supplied_id_is_idempotent(api):
    tag = scope()
    memory_id = f"src:{uuid.uuid4().hex}"
    for _ in range(3):
        response = api.post("/memory", json={"id": memory_id, "content": "retried write", "tags": [tag]})
        assert response.status_code == 201 and response.json()["memory_id"] == memory_id
    assert recall_ids(api, query="retried write", tags=tag, limit=10) == [memory_id]


def test_embedding_given_directly(api, stack):
    tag = scope()
    vector = [0.0] * 384
    vector[7] = 1.0
    memory_id = api.post("/memory", json={"content": "pre-embedded", "tags": [tag], "embedding": vector}).json()["memory_id"]
    hits = api.get("/recall", params={"embedding": ",".join(map(str, vector)), "tags": tag}).json()["results"]
    assert hits[0]["id"] == memory_id
    assert hits[0]["score_components"]["vector"] == pytest.approx(1.0, abs=1e-5)
    bad = api.get("/recall", params={"embedding": "0.1,0.2"})
    assert bad.status_code == 400 and "embedding" in bad.json()["message"]


BAD_WRITES = [
    ({"tags": ["x"]}, 400, "content"),
    ({"content": ""}, 400, "content"),
    ({"content": "x" * 9000}, 400, "content"),
    ({"content": "c", "tags": "solo"}, 400, "tags"),
    ({"content": "c", "tags": [1]}, 400, "tags"),
    ({"content": "c", "importance": 7}, 400, "importance"),
    ({"content": "c", "confidence": -1}, 400, "confidence"),
    ({"content": "c", "timestamp": "not a date"}, 400, "timestamp"),
    ({"content": "c", "type": "Gossip"}, 400, "type"),
    ({"content": "c", "metadata": ["list"]}, 400, "metadata"),
    ({"content": "c", "embedding": [1.0, 2.0]}, 400, "embedding"),
]


@pytest.mark.parametrize("body, status, field", BAD_WRITES)
def test_bad_writes_are_rejected_and_store_nothing(api, stack, body, status, field):
    tag = scope()
    if "tags" not in body:
        body = {**body, "tags": [tag]}
    before = held_message_ids(stack, PERSIST_QUEUE)
    response = api.post("/memory", json=body)
    assert response.status_code == status
    envelope = response.json()
    assert envelope["status"] == "error" and envelope["code"] == status
    assert envelope["message"].startswith(field), envelope["message"]
    # Nothing queued by this request (whatever earlier tests left is theirs), nothing stored.
    assert held_message_ids(stack, PERSIST_QUEUE) - before == set()
    assert api.get("/recall", params={"tags": tag}).json()["count"] == 0


def test_malformed_and_oversized_bodies(api, stack):
    tag = scope()
    before = held_message_ids(stack, PERSIST_QUEUE)
    truncated = f'{{"content": "cut short", "tags": ["{tag}"]'.encode()
    for body in (b"{not json", truncated, b""):
        response = api.post("/memory", content=body, headers={"content-type": "application/json"})
        assert response.status_code == 400 and response.json()["message"].startswith("body"), response.text
    oversized = f'{{"content": "{"x" * 1_100_000}", "tags": ["{tag}"]}}'.encode()
    response = api.post("/memory", content=oversized, headers={"content-type": "application/json"})
    assert response.status_code == 413 and response.json()["status"] == "error"
    assert "body" in response.json()["message"]
    # Nothing of them was queued or stored.
    assert held_message_ids(stack, PERSIST_QUEUE) - before == set()
    assert api.get("/recall", params={"tags": tag}).json()["count"] == 0
    assert api.get("/memory/by-tag", params={"tags": tag}).json()["count"] == 0


def test_auth_forms_and_refusals(stack):
    memory_route = f"{stack.url}/recall"
    assert httpx.get(memory_route).status_code == 401
    assert httpx.get(memory_route, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert httpx.get(memory_route, headers={"Authorization": f"Bearer {API_TOKEN}"}).status_code == 200
    assert httpx.get(memory_route, headers={"X-API-Key": API_TOKEN}).status_code == 200
    assert httpx.get(memory_route, params={"api_key": API_TOKEN}).status_code == 200
    refused = httpx.post(f"{stack.url}/memory", json={"content": "x"})
    assert refused.status_code == 401 and refused.json() == {"status": "error", "code": 401, "message": "missing or invalid API token"}
    assert httpx.get(f"{stack.url}/health").status_code == 200  # open
    assert ADMIN_TOKEN != API_TOKEN


def test_requests_a_web_page_could_send_are_refused(stack):
    # Over a real loopback socket: the guard sees the interface the connection arrived on.
    rebound = httpx.get(f"{stack.url}/health", headers={"Host": f"attacker.example:{stack.port}"})
    assert rebound.status_code == 421 and rebound.json()["status"] == "error", rebound.text
    plain = httpx.post(f"{stack.url}/memory", content=b'{"content": "x"}', headers={**AUTH, "Content-Type": "text/plain"})
    assert plain.status_code == 415 and "application/json" in plain.json()["message"], plain.text
    cross = httpx.post(f"{stack.url}/consolidate", headers={**AUTH, "Origin": "https://attacker.example"})
    assert cross.status_code == 403 and "attacker.example" in cross.json()["message"], cross.text
    assert httpx.get(f"{stack.url}/health", headers={"Host": f"localhost:{stack.port}"}).status_code == 200


def test_recall_parameter_errors(api):
    for params, field in [({"tag_mode": "some"}, "tag_mode"), ({"tag_match": "fuzzy"}, "tag_match"),
                          ({"limit": "ten"}, "limit"), ({"limit": "0"}, "limit")]:
        response = api.get("/recall", params=params)
        assert response.status_code == 400 and response.json()["message"].startswith(field)
    assert api.get("/recall", params={"limit": 5000}).status_code == 200  # clamped, not rejected


def test_unknown_route_uses_the_envelope(api):
    response = api.get("/no-such-route")
    assert response.status_code == 404 and response.json()["status"] == "error"


def test_health_reports_the_pipeline(make_stack):
    # A stack of its own: the counts are this test's writes, not what other tests left queued.
    stack = make_stack()
    stack.start_web()
    stack.start_worker(processes=1, threads=2)
    with stack.client() as api:
        for i in range(2):
            response = api.post("/memory", json={"content": f"health note {i}", "tags": [scope()]})
            assert response.status_code in (201, 202), response.text  # 202: slower than the wait bound
        # Recallable means in both stores; the bound is the write path's, on a cold stack.
        health = wait_until(lambda: (h := api.get("/health").json())["memory_count"] == h["vector_count"] == 2 and h,
                            timeout=60, message="both writes in the graph and the vector index")
    assert health["status"] == "healthy"
    assert health["broker"] == health["falkordb"] == health["qdrant"] == "connected"
    assert health["vector_backend"] == "qdrant-edge"
    assert set(health["queues"]) == {"persist", "embed", "vectors", "enrich", "similarity", "maintenance"}
    assert health["dead_letter_count"] == 0
    assert health["embedding"]["provider"] == "hash" and "warning" in health["embedding"]


def test_idle_stages_are_woken_by_each_enqueue_not_by_polling(make_stack):
    # Each idle consumer of persist, embed and vectors waits up to 5 s between fetches: a
    # write would take one wait per stage (15 s) if only polling found it, far past the
    # 2 s a waiting write is given. Woken at each enqueue it is recallable within it.
    stack = make_stack(QUEUE_POLL_MS="5000", HEARTBEAT_TIMEOUT_MS="30000")
    stack.start_web()
    stack.start_worker(processes=1, threads=2)
    with stack.client() as client:
        assert client.post("/memory", json={"content": "warm-up"}).status_code in (201, 202)
        for i in range(3):
            # Every write-path consumer back in its wait (BLPOP, up to 5 s), so only a wake-up can
            # bring the next write through within the 2 s bound.
            wait_until(lambda: consumers_waiting(stack) >= len(HOT_QUEUES), timeout=10, interval=0.05,
                       message="persist, embed and vectors consumers waiting")
            response = client.post("/memory", json={"content": f"woken write {i}", "tags": [scope()]})
            assert response.status_code == 201, response.text
            assert response.json()["state"] == "recallable"
