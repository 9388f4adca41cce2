"""/metrics on the web process, and the worker-side exporter, over the real stack."""

from __future__ import annotations

import time
import uuid

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from ops.redis_servers import free_port
from ops.bench.stack import Stack, wait_until

pytestmark = pytest.mark.integration


def samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    return [(s.name, s.labels, s.value) for family in text_string_to_metric_families(text) for s in family.samples]


def value(text: str, name: str, **labels) -> float | None:
    for sample_name, sample_labels, sample_value in samples(text):
        if sample_name == name and all(sample_labels.get(k) == v for k, v in labels.items()):
            return sample_value
    return None


def test_web_metrics_need_the_token_and_cover_http_queues_stores_actors(stack, api):
    assert httpx.get(f"{stack.url}/metrics", timeout=10).status_code == 401
    tag = f"m-{uuid.uuid4().hex[:8]}"
    assert api.post("/memory", json={"content": "metrics are scraped", "tags": [tag]}).status_code == 201
    assert api.get("/recall", params={"query": "metrics scraped", "tags": tag}).status_code == 200
    assert api.get("/memory/no-such-id").status_code == 404

    response = api.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert value(text, "http_requests_total", handler="/memory", method="POST", status="201") >= 1
    assert value(text, "http_requests_total", handler="/memory/{memory_id}", method="GET", status="404") >= 1
    assert value(text, "http_request_duration_seconds_count", handler="/recall", method="GET") >= 1
    assert value(text, "mempipe_broker_up") == 1
    for queue in ("persist", "embed", "vectors", "enrich", "maintenance"):
        assert value(text, "mempipe_queue_waiting_messages", queue=queue) is not None
        assert value(text, "mempipe_queue_oldest_message_age_seconds", queue=queue) is not None
        assert value(text, "mempipe_dead_letter_messages", queue=queue) is not None
    # The web process consumes the vector stage itself (Qdrant Edge): its actor metrics are here.
    assert value(text, "dramatiq_messages_total", queue_name="vectors", actor_name="index_vectors") >= 1
    assert value(text, "mempipe_store_operation_seconds_count", store="vectors", operation="upsert") >= 1
    assert value(text, "mempipe_store_operation_seconds_count", store="vectors", operation="search") >= 1
    # recall embeds its query here
    assert value(text, "mempipe_embedding_calls_total", provider="hash") >= 1


def test_queue_depth_age_then_worker_exporter(servers):
    stack = Stack.create(servers)
    stack.start_web()
    try:
        with stack.client() as api:
            # No worker yet: the write waits in the persist queue and ages there.
            response = api.post("/memory", params={"wait": "false"}, json={"content": "waiting in line"})
            assert response.status_code == 202
            text = wait_until(
                lambda: (t := api.get("/metrics").text)
                and (value(t, "mempipe_queue_oldest_message_age_seconds", queue="persist") or 0) >= 0.3 and t,
                timeout=10, interval=0.05, message="the waiting write aged 0.3 s")
            assert value(text, "mempipe_queue_waiting_messages", queue="persist") == 1
            assert value(text, "mempipe_queue_oldest_message_age_seconds", queue="persist") >= 0.3
            assert value(text, "mempipe_queue_oldest_message_age_seconds", queue="embed") == 0

            port = free_port()
            stack.start_worker(processes=2, threads=1, worker_metrics_port=str(port), worker_metrics_host="127.0.0.1")
            memory_id = response.json()["memory_id"]
            wait_until(lambda: api.get(f"/memory/{memory_id}").status_code == 200, timeout=60, message="persisted")
            wait_until(lambda: value(api.get("/metrics").text, "mempipe_queue_waiting_messages", queue="persist") == 0,
                       message="persist queue drained")

        def scrape():
            try:
                return httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
            except httpx.HTTPError:
                return ""

        worker_text = wait_until(
            lambda: (lambda t: t if (value(t, "dramatiq_messages_total", actor_name="embed_memories") or 0) >= 1 else "")(scrape()),
            timeout=60, message="worker exporter shows the embed stage",
        )
        assert value(worker_text, "dramatiq_messages_total", queue_name="persist", actor_name="persist_memories") >= 1
        assert value(worker_text, "dramatiq_message_duration_milliseconds_count", actor_name="persist_memories") >= 1
        assert value(worker_text, "mempipe_store_operation_seconds_count", store="graph", operation="upsert_memories") >= 1
        assert value(worker_text, "mempipe_embedding_texts_total", provider="hash") >= 1
        assert value(worker_text, "mempipe_embedding_tokens_total", provider="hash") >= 1
    finally:
        stack.stop()


def test_dead_letters_retries_and_embedding_errors_are_counted(servers):
    # an unreachable provider is an outage: a zero window leaves it the one retry of ACTOR_MAX_RETRIES
    stack = Stack.create(servers, actor_max_retries="1", actor_unavailable_retry_seconds="0")
    stack.start_web()
    port = free_port()
    # An embedding provider that cannot be reached: the embed stage fails, retries once, dead-letters.
    stack.start_worker(
        EMBEDDING_PROVIDER="openai", OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=f"http://127.0.0.1:{free_port()}/v1",
        VECTOR_SIZE="384", WORKER_METRICS_PORT=str(port), WORKER_METRICS_HOST="127.0.0.1",
    )
    try:
        with stack.client() as api:
            api.post("/memory", params={"wait": "false"}, json={"content": "never embedded"})
            wait_until(lambda: value(api.get("/metrics").text, "mempipe_dead_letter_messages", queue="embed") == 1,
                       timeout=60, message="dead letter counted")
        labels = {"queue_name": "embed", "actor_name": "embed_memories"}

        def scrape() -> str:
            # The exporter is a fork of the worker command: on a loaded machine it may answer
            # after the worker has already dead-lettered the message.
            try:
                text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
            except httpx.HTTPError:
                return ""
            return text if value(text, "dramatiq_message_rejects_total", **labels) else ""

        worker_text = wait_until(scrape, timeout=60, message="worker exporter shows the dead-lettered message")
        assert value(worker_text, "dramatiq_message_rejects_total", **labels) == 1
        assert value(worker_text, "dramatiq_message_retries_total", **labels) == 1
        assert value(worker_text, "dramatiq_message_errors_total", **labels) == 2
        assert value(worker_text, "mempipe_embedding_errors_total", provider="openai") >= 2
    finally:
        stack.stop()


def test_drift_counts_from_the_last_sync(stack, api):
    from ops.bench.stack import ADMIN_TOKEN

    run = api.post("/admin/sync", headers={"X-Admin-Token": ADMIN_TOKEN}, json={"dry_run": True})
    assert run.status_code == 200, run.text
    drift = run.json()["drift"]
    text = api.get("/metrics").text
    for kind in ("orphan_vector", "payload_mismatch", "stale_content", "missing_vector"):
        assert value(text, "mempipe_drift_memories", kind=kind) == drift[kind]["count"]
    assert value(text, "mempipe_drift_last_sync_timestamp_seconds") > time.time() - 300
