"""Faults that end in a reconciliation: every acknowledged write stored exactly once, in the
graph and in the vector index, recall right, no queue left holding anything.

Each test runs its own stack (and, where the fault is the broker's, its own broker), so the
fault never reaches the session stack other tests share.
"""

from __future__ import annotations

import threading
import time
import uuid
from datetime import datetime, timezone
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import redis
from falkordb import FalkorDB

from ops.redis_servers import RedisServer, free_port
from ops.bench.stack import ADMIN_TOKEN, Stack, wait_until
from pipeline.graph import GraphStore

pytestmark = pytest.mark.integration


@pytest.fixture()
def make_stack(make_stack):
    # Enrichment is not under test here and has no worker in these stacks: off, so that
    # "every queue empty" is a condition the stack can reach.
    return lambda **env: make_stack(**{"ENRICHMENT_ENABLED": "false", **env})


def reconcile(stack: Stack, expected: dict[str, str], timeout: float = 120) -> None:
    """Every id in ``expected`` (id → content) is in graph and vectors exactly once, and nothing is left queued."""
    with stack.client() as api:
        last: dict = {}

        def settled() -> bool:
            last.clear()
            last.update(api.get("/health").json())
            queues = last.get("queues") or {}
            return (last["memory_count"], last["vector_count"]) == (len(expected), len(expected)) and \
                not any(queues.values()) and last["dead_letter_count"] == 0
        try:
            wait_until(settled, timeout=timeout, interval=0.5)
        except AssertionError:
            raise AssertionError(f"not reconciled to {len(expected)} memories; last health: {last}\n"
                                 f"web log: {stack.read_log('web')[-1500:]}\nworker log: {stack.read_log('worker')[-1500:]}") from None
        for memory_id, content in expected.items():
            response = api.get(f"/memory/{memory_id}")
            assert response.status_code == 200, (memory_id, response.text)
            assert response.json()["memory"]["content"] == content
        # Exactly once: the graph holds one node per id (counts above), and drift repair finds
        # nothing to repair between graph and vectors.
        sync = api.post("/admin/sync", json={"dry_run": True}, headers={"X-Admin-Token": ADMIN_TOKEN})
        assert sync.status_code == 200, sync.text
        assert all(kind["count"] == 0 for kind in sync.json()["drift"].values()), sync.json()["drift"]


def _queue_depths(api: httpx.Client) -> dict[str, int]:
    return api.get("/health").json().get("queues") or {}


def _aof_flushed(server: RedisServer) -> bool:
    info = redis.Redis(port=server.port).info("persistence")
    return info.get("aof_enabled") == 1 and info.get("aof_buffer_length", 0) == 0 \
        and info.get("aof_pending_bio_fsync", 0) == 0


def test_broker_crash_and_restart_keeps_queued_writes(make_stack, tmp_path):
    """The broker runs as the embedded default runs it (AOF, everysec); killed -9 with writes queued."""
    broker = RedisServer("broker-aof", free_port(), tmp_path / "broker")
    broker.start()
    stack = make_stack()
    stack.broker_port, stack.redis_db = broker.port, 0  # this test's own broker
    try:
        stack.start_web()  # no worker yet: every write stays queued in the broker
        tag = f"aof-{uuid.uuid4().hex[:6]}"
        expected: dict[str, str] = {}
        with stack.client() as api:
            for i in range(15):
                content = f"queued single write {i} before the broker crash"
                response = api.post("/memory", params={"wait": "false"}, json={"content": content, "tags": [tag]})
                assert response.status_code == 202, response.text
                expected[response.json()["memory_id"]] = content
            batch = [{"content": f"queued batch item {i} before the broker crash", "tags": [tag]} for i in range(25)]
            response = api.post("/memory/batch", json={"memories": batch})
            assert response.status_code == 201, response.text
            for item, result in zip(batch, response.json()["results"]):
                expected[result["memory_id"]] = item["content"]
            assert sum(_queue_depths(api).values()) > 0
            assert api.get("/health").json()["memory_count"] == 0

            # What redis acknowledged is in the AOF once its buffer is written out; then crash it.
            wait_until(lambda: _aof_flushed(broker), timeout=30, message="AOF written")
            broker.kill()
            assert api.get("/health").json()["status"] == "unhealthy"
            broker.start()  # same dir: the AOF brings the queues back
            wait_until(lambda: api.get("/health").json()["status"] == "healthy", timeout=60, message="broker back")
            assert sum(_queue_depths(api).values()) > 0, "the queued messages did not survive the restart"

            stack.start_worker()
            # The web's broker connections recovered: a new write completes end to end.
            content = "written after the broker came back"
            response = api.post("/memory", json={"content": content, "tags": [tag]})
            assert response.status_code in (201, 202), response.text
            expected[response.json()["memory_id"]] = content
        reconcile(stack, expected)
        with stack.client() as api:
            hits = api.get("/recall", params={"query": "queued batch item 7 before the broker crash", "tags": tag}).json()
            assert hits["results"][0]["memory"]["content"] == "queued batch item 7 before the broker crash"
    finally:
        stack.stop()
        broker.stop()


def test_vector_outage_recall_degrades_then_vectors_catch_up(make_stack, tmp_path):
    switch = tmp_path / "vectors-down"
    # Retries (Dramatiq's, backoff capped at 1 s here) outlast the outage: nothing reaches the DLQ.
    stack = make_stack(MEMPIPE_TEST_VECTOR_OUTAGE=str(switch), ACTOR_MAX_RETRIES="1000")
    stack.start_web(app="tests.vector_outage:create_partitioned_app")
    stack.start_worker()
    tag = f"vo-{uuid.uuid4().hex[:6]}"
    expected: dict[str, str] = {}
    with stack.client() as api:
        content = "a lighthouse keeper logs the weather before the outage"
        response = api.post("/memory", json={"content": content, "tags": [tag]})
        expected[response.json()["memory_id"]] = content
        wait_until(lambda: api.get("/health").json()["vector_count"] == 1, timeout=60, message="first memory indexed")

        switch.touch()
        health = api.get("/health").json()
        assert health["status"] == "degraded" and health["qdrant"] == "unavailable"
        content = "a lighthouse keeper trims the lamp wick during the outage"
        waited = api.post("/memory", json={"content": content, "tags": [tag]})
        assert waited.status_code == 202, waited.text  # accepted and durable, not recallable by vector yet
        expected[waited.json()["memory_id"]] = content
        for i in range(10):
            content = f"lighthouse keeper note {i} written while vectors are down"
            response = api.post("/memory", params={"wait": "false"}, json={"content": content, "tags": [tag]})
            assert response.status_code == 202, response.text
            expected[response.json()["memory_id"]] = content
        wait_until(lambda: api.get("/health").json()["memory_count"] == len(expected), timeout=60,
                   message="writes persisted to the graph during the vector outage")

        # Recall answers from the graph alone: 200, says vector search is off, finds the memories
        # (with Edge the graph indexes no content: its content search is a scan).
        graph = GraphStore(FalkorDB(host="127.0.0.1", port=stack.graph_port), stack.env()["FALKORDB_GRAPH"])
        assert not graph.content_indexed
        recall = api.get("/recall", params={"query": "lighthouse keeper", "tags": tag, "limit": 20})
        assert recall.status_code == 200, recall.text
        body = recall.json()
        assert body["vector_search"]["enabled"] is False and body["vector_search"].get("error")
        found = {hit["id"] for hit in body["results"]}
        assert found and found <= set(expected) and all(hit["match_type"] != "vector" for hit in body["results"])
        assert api.get("/recall", params={"tags": tag, "limit": 20}).status_code == 200
        assert api.get(f"/memory/{waited.json()['memory_id']}").status_code == 200

        switch.unlink()  # the store answers again: the retried vector messages land
    reconcile(stack, expected)
    with stack.client() as api:
        body = api.get("/recall", params={"query": "trims the lamp wick during the outage", "tags": tag}).json()
        assert body["vector_search"]["enabled"] is True
        assert body["results"][0]["id"] == waited.json()["memory_id"]
        assert body["results"][0]["match_type"] == "vector"


def test_web_restart_with_waiting_writes_in_flight(make_stack):
    """SIGKILL the web process while clients wait on writes; they retry with the same id."""
    stack = make_stack()
    stack.start_web()
    stack.start_worker(processes=1, threads=2)
    run = uuid.uuid4().hex[:6]
    clients, per_client = 4, 15
    acknowledged: dict[str, str] = {}
    connection_errors = 0
    in_flight = 0
    lock = threading.Lock()

    def writer(client_no: int) -> None:
        nonlocal connection_errors, in_flight
        with httpx.Client(base_url=stack.url, headers={"Authorization": "Bearer test-api-token"}, timeout=30) as api:
            for k in range(per_client):
                memory_id = f"restart-{run}-{client_no}-{k}"
                content = f"client {client_no} write {k} across a web restart"
                # A retry resends the very same body: with the timestamp fixed by the client, the
                # attempt taken before the kill and its retry are one write, not two.
                body = {"id": memory_id, "content": content, "tags": [run],
                        "timestamp": datetime.now(timezone.utc).isoformat()}
                deadline = time.monotonic() + 120
                while True:
                    with lock:
                        in_flight += 1
                    try:
                        response = api.post("/memory", json=body)
                    except httpx.TransportError:
                        # No answer: the client cannot know whether it was taken, so it sends
                        # the same id again once the service is back.
                        with lock:
                            connection_errors += 1
                        response = None
                    finally:
                        with lock:
                            in_flight -= 1
                    if response is not None and response.status_code in (201, 202):
                        with lock:
                            acknowledged[memory_id] = content
                        break
                    assert response is None or response.status_code in (429, 503), response.text
                    assert time.monotonic() < deadline, f"{memory_id} never accepted"
                    time.sleep(0.2)

    with ThreadPoolExecutor(clients) as pool:
        futures = [pool.submit(writer, c) for c in range(clients)]
        wait_until(lambda: len(acknowledged) >= 6 and in_flight > 0, timeout=60, interval=0.005,
                   message="writes in flight")
        stack.web.kill()  # SIGKILL: no graceful shutdown, requests cut mid-wait
        stack.web.wait()
        stack.start_web()
        for future in futures:
            future.result()
    assert connection_errors > 0, "no write saw the restart; the test proved nothing"
    assert len(acknowledged) == clients * per_client
    reconcile(stack, acknowledged)
    with stack.client() as api:
        hits = api.get("/recall", params={"query": "client 2 write 11 across a web restart", "tags": run}).json()
        assert hits["results"][0]["id"] == f"restart-{run}-2-11"
