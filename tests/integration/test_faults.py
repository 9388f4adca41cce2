"""Nothing accepted is lost, nothing is doubled: crashes, outages, poison, restarts."""

from __future__ import annotations

import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from ops.redis_servers import RedisServer, free_port
from pipeline.broker import COLD_POLL_MS, held_messages_key
from pipeline.redelivery import redelivery_bound_s
from pipeline.stages import HOT_QUEUES
from ops.bench.stack import Stack, wait_until

pytestmark = pytest.mark.integration


def _counts(api) -> tuple[int | None, int | None]:
    health = api.get("/health").json()
    return health["memory_count"], health["vector_count"]


def test_pending_memory_is_reported_pending_not_404(make_stack):
    stack = make_stack()
    stack.start_web()  # no worker yet: writes stay queued
    with stack.client() as api:
        response = api.post("/memory", params={"wait": "false"}, json={"content": "waiting in line", "tags": ["p"]})
        assert response.status_code == 202
        memory_id = response.json()["memory_id"]
        pending = api.get(f"/memory/{memory_id}")
        assert pending.status_code == 202
        assert pending.json()["status"] == "pending" and pending.json()["state"] == "queued"
        assert pending.json()["memory"]["content"] == "waiting in line"
        assert api.patch(f"/memory/{memory_id}", json={"importance": 0.2}).status_code == 409
        # a waiting write answers 202 once the bound passes
        slow = api.post("/memory", json={"content": "bounded wait", "tags": ["p"]})
        assert slow.status_code == 202 and slow.json()["state"] == "queued"
        assert _counts(api) == (0, 0)  # the API process wrote neither store itself: both writes are queued

        stack.start_worker()
        wait_until(lambda: api.get(f"/memory/{memory_id}").status_code == 200, message="persisted after worker start")
        wait_until(lambda: _counts(api) == (2, 2), message="both memories indexed")


def test_worker_killed_mid_batch_loses_nothing_and_doubles_nothing(make_stack):
    stack = make_stack()
    stack.start_web()
    # Not waiting for it to boot: the writes pile up meanwhile, so it is busy when killed.
    worker = stack.start_worker(processes=1, threads=2, wait=False)
    total = 600
    ids: list[str] = []
    lock = threading.Lock()

    def write(i: int) -> None:
        with stack.client() as api:
            response = api.post("/memory", params={"wait": "false"}, json={"content": f"firehose message {i}", "tags": ["kill"]})
            assert response.status_code == 202
            with lock:
                ids.append(response.json()["memory_id"])

    broker = redis.Redis.from_url(stack.redis_url)

    def in_flight() -> int:
        """Messages a worker has taken but not acknowledged (the web's own queues excluded)."""
        return sum(
            broker.scard(key) for key in broker.scan_iter("mempipe:__acks__.*")
            if not key.decode().endswith((".vectors", ".vectors.DQ", ".similarity", ".similarity.DQ"))
        )

    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(write, i) for i in range(total)]
        # Kill it the moment it holds unacknowledged messages; if it happened to ack them all
        # in between, start another and try again, so the test always proves something.
        for _ in range(10):
            wait_until(lambda: in_flight() > 0, timeout=60, interval=0.002, message="worker holding messages")
            Stack.kill_worker(worker)
            if in_flight() > 0:
                break
            worker = stack.start_worker(processes=1, threads=2, wait=False)
        in_flight_at_kill = in_flight()
        for future in futures:
            future.result()
    assert in_flight_at_kill > 0, "the worker was killed with nothing in flight; the test proved nothing"

    stack.start_worker(processes=1, threads=2)  # its maintenance redelivers the dead worker's messages
    with stack.client() as api:
        wait_until(lambda: _counts(api) == (total, total), timeout=90, message=f"{total} memories in graph and vectors")
        assert all(api.get(f"/memory/{m}").status_code == 200 for m in ids[:: 25])
        assert api.get("/health").json()["dead_letter_count"] == 0


def test_worker_killed_holding_messages_at_idle_they_land_within_the_redelivery_bound(make_stack):
    """No write after the kill and a surviving worker with nothing else to do: only the periodic
    maintenance round hands the dead worker's messages back (``pipeline.redelivery``)."""
    stack = make_stack()
    stack.start_web()
    broker = redis.Redis.from_url(stack.redis_url)
    heartbeats = "mempipe:__heartbeats__"

    def broker_ids() -> set[str]:
        return {member.decode() for member in broker.zrange(heartbeats, 0, -1)}

    def held_by(ids: set[str]) -> int:
        return sum(broker.scard(key) for key in broker.scan_iter("mempipe:__acks__.*")
                   if key.decode().split(".")[1] in ids)

    survivor = stack.start_worker(processes=1, threads=2)
    wait_until(lambda: len(broker_ids()) >= 2, timeout=30, message="web and survivor heartbeating")
    before = broker_ids()
    total, batches, held_at_kill = 0, 0, 0
    with stack.client() as api:
        for _ in range(10):  # until the victim is killed holding messages
            victim = stack.start_worker(processes=1, threads=2)
            wait_until(lambda: broker_ids() - before, timeout=30, message="the victim heartbeating")
            victim_ids = broker_ids() - before
            for _ in range(3):  # a backlog both workers take from
                batch = [{"content": f"idle kill {batches} {i}", "tags": ["idle-kill"]} for i in range(200)]
                assert api.post("/memory/batch", json={"memories": batch}).status_code in (201, 202)
                total += len(batch)
                batches += 1
            try:
                wait_until(lambda: held_by(victim_ids) > 0, timeout=30, interval=0.002, message="victim holding messages")
            except AssertionError:
                Stack.kill_worker(victim)
                continue
            Stack.kill_worker(victim)
            held_at_kill = held_by(victim_ids)
            if held_at_kill:
                break
            before |= victim_ids
        assert held_at_kill > 0, "the victim was never killed holding messages; the test proved nothing"
        # From here on nothing is written: the survivor drains the backlog, then idles.
        killed_at = time.monotonic()
        bound = redelivery_bound_s(int(stack.env()["HEARTBEAT_TIMEOUT_MS"]), COLD_POLL_MS)
        wait_until(lambda: _counts(api) == (total, total), timeout=30 + 2 * bound,
                   message=f"{total} memories in graph and vectors")
        # A message the victim had finished but not acknowledged is counted already; it goes back
        # to its queue at the survivor's next maintenance round, within the bound, and runs again.
        wait_until(lambda: held_by(victim_ids) == 0, timeout=30 + 2 * bound,
                   message="the victim's unacknowledged messages back on their queues")
        wait_until(lambda: all(broker.hlen(held_messages_key(queue)) == 0 for queue in HOT_QUEUES), timeout=60,
                   message="the handed-back messages run again")
        assert _counts(api) == (total, total)  # run again, they doubled nothing
        assert api.get("/health").json()["dead_letter_count"] == 0
        elapsed = time.monotonic() - killed_at
    assert survivor.poll() is None
    print(f"victim held {held_at_kill} messages; all {total} stored {elapsed:.1f}s after the kill (bound {bound:.1f}s)")


def test_graph_outage_keeps_accepting_writes_and_they_land_later(make_stack, tmp_path):
    graph = RedisServer("graph-outage", free_port(), tmp_path / "graph", with_falkordb=True)
    graph.start()
    stack = make_stack(graph_port=graph.port)
    try:
        stack.start_web()
        stack.start_worker()
        with stack.client() as api:
            assert api.post("/memory", json={"content": "before the outage", "tags": ["outage"]}).status_code == 201
            graph.stop()
            health = api.get("/health").json()
            assert health["status"] == "degraded" and health["falkordb"] == "unavailable"
            accepted = []
            for i in range(20):
                response = api.post("/memory", params={"wait": "false"}, json={"content": f"during outage {i}", "tags": ["outage"]})
                assert response.status_code == 202
                accepted.append(response.json()["memory_id"])
            assert api.get(f"/memory/{accepted[0]}").status_code in (202, 503)
            graph.start()  # same data dir: the AOF brings back what was there
            wait_until(lambda: _counts(api) == (21, 21), timeout=90, message="writes landed after the outage")
            assert all(api.get(f"/memory/{m}").status_code == 200 for m in accepted)
    finally:
        stack.stop()
        graph.stop()


def test_poison_message_reaches_dead_letters_and_replays(make_stack):
    # an unreachable provider is an outage: its retry window is ACTOR_UNAVAILABLE_RETRY_SECONDS
    stack = make_stack(ACTOR_MAX_RETRIES="1", ACTOR_UNAVAILABLE_RETRY_SECONDS="0")
    stack.start_web()
    broken = stack.start_worker(
        EMBEDDING_PROVIDER="openai", OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=f"http://127.0.0.1:{free_port()}/v1",
        VECTOR_SIZE="384",
    )
    with stack.client() as api:
        memory_id = api.post("/memory", params={"wait": "false"}, json={"content": "embed me later", "tags": ["dlq"]}).json()["memory_id"]
        wait_until(lambda: api.get("/health").json()["dead_letter_count"] == 1, timeout=60, message="message dead-lettered")
        failed = api.get(f"/memory/{memory_id}")
        assert failed.status_code == 200 and failed.json()["state"] == "failed"  # persisted; only embedding failed
        assert "embed_memories" in failed.json()["reason"] and api.get("/health").json()["failed_writes"] == 1
        listed = stack.run_tool("-m", "ops.deadletters", "list")
        assert "embed_memories" in listed.stdout and "embed" in listed.stdout, listed

        Stack.stop_worker(broken)
        stack.start_worker()  # the provider is healthy again
        replayed = stack.run_tool("-m", "ops.deadletters", "replay")
        assert "replayed 1" in replayed.stdout, replayed
        wait_until(lambda: _counts(api) == (1, 1), timeout=60, message="replayed memory indexed")
        assert api.get("/health").json()["dead_letter_count"] == 0 and api.get("/health").json()["failed_writes"] == 0
        assert "state" not in api.get(f"/memory/{memory_id}").json()
        hits = api.get("/recall", params={"query": "embed me later", "tags": "dlq"}).json()["results"]
        assert hits and hits[0]["id"] == memory_id and hits[0]["match_type"] == "vector"


def test_qdrant_server_path_with_local_mode(make_stack):
    """QDRANT_URL set: a stateless web tier, every worker consumes every queue (here: the web's own)."""
    stack = make_stack(QDRANT_URL=":memory:", WEB_WORKER_QUEUES="all")
    stack.start_web()
    with stack.client() as api:
        response = api.post("/memory", json={"content": "Server path stores vectors in Qdrant", "tags": ["srv"]})
        assert response.status_code == 201, response.text
        health = api.get("/health").json()
        assert health["vector_backend"] == "qdrant-server" and health["vector_count"] == 1
        hits = api.get("/recall", params={"query": "qdrant vectors", "tags": "srv"}).json()["results"]
        assert hits[0]["id"] == response.json()["memory_id"] and hits[0]["match_type"] == "vector"


def test_vector_size_change_waits_for_migration_and_an_unknown_mismatch_stops_start_up(make_stack):
    import redis

    stack = make_stack()
    stack.start_web()
    stack.stop()
    stack.extra_env["VECTOR_SIZE"] = "128"
    stack.start_web()  # the live collection (recorded in Redis) keeps serving until POST /admin/reembed migrates
    with stack.client() as api:
        vectors = api.get("/health").json()["vectors"]
        assert vectors["live"]["dims"] == 384 and vectors["configured_dims"] == 128 and vectors["migration_needed"]
    stack.stop()
    redis.Redis.from_url(stack.redis_url).delete("mempipe:vectors:collections:memories")  # no record of what is live
    with pytest.raises(RuntimeError):
        stack.start_web(timeout=30)
    log = stack.read_log("web")
    assert "vector collection stores" in log and "produces 128" in log, log


def test_restart_finds_the_data(make_stack):
    stack = make_stack()
    stack.start_web()
    stack.start_worker()
    tag = f"r-{uuid.uuid4().hex[:6]}"
    with stack.client() as api:
        memory_id = api.post("/memory", json={"content": "survives restarts", "tags": [tag]}).json()["memory_id"]
        # a cold stack on a busy machine may answer 202: wait until it is really in both stores
        wait_until(lambda: _counts(api) == (1, 1), timeout=60, message="memory indexed before the restart")
    stack.stop()
    stack.start_web()
    with stack.client() as api:
        hits = api.get("/recall", params={"query": "survives restarts", "tags": tag}).json()["results"]
        assert [h["id"] for h in hits] == [memory_id]
        assert hits[0]["match_type"] == "vector"  # the Edge shard came back from disk
