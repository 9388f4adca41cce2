"""What the service will not do to its own data, over the real stack."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ops.bench.stack import ADMIN_TOKEN, ROOT, wait_until
from tests.graph_helpers import stack_graph

pytestmark = [pytest.mark.integration, pytest.mark.security]
ADMIN = {"X-Admin-Token": ADMIN_TOKEN}
KEPT_FIELDS = ("content", "tags", "importance", "type", "timestamp", "metadata")


def store_many(api, count: int, label: str) -> dict[str, dict]:
    sent = {}
    for i in range(count):
        body = {"content": f"{label} memory number {i} about topic {i * 7}", "tags": [label, f"n{i}"],
                "importance": round(0.1 + i / 50, 3), "metadata": {"source": label, "n": i}}
        response = api.post("/memory", json=body)
        assert response.status_code in (201, 202), response.text
        sent[response.json()["memory_id"]] = body
    wait_until(lambda: (h := api.get("/health").json())["memory_count"] == count and h["vector_count"] == count,
               timeout=60, message="stores settled")
    return sent


def assert_every_memory_back(api, sent: dict[str, dict], before: dict[str, dict]) -> None:
    for memory_id, body in sent.items():
        response = api.get(f"/memory/{memory_id}")
        assert response.status_code == 200, (memory_id, response.text)
        memory = response.json()["memory"]
        assert {f: memory.get(f) for f in KEPT_FIELDS} == {f: before[memory_id].get(f) for f in KEPT_FIELDS}


def sync_runs(api, status: str, trigger: str = "clock") -> list[dict]:
    history = api.get("/consolidate/status").json()["history"]
    return [h for h in history if h["kind"] == "sync" and h["status"] == status and h["trigger"] == trigger]


def metric(api, name: str) -> float:
    for line in api.get("/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not exported")


def test_a_wiped_graph_is_not_turned_into_loss_by_the_clock_and_every_memory_is_recovered(serving_stack):
    # No enrichment worker in this stack: its queue never drains, so scheduled syncs are not held for it.
    stack = serving_stack(SYNC_INTERVAL_SECONDS="2", CONSOLIDATION_DECAY_INTERVAL_SECONDS="0",
                       CONSOLIDATION_CREATIVE_INTERVAL_SECONDS="0", CONSOLIDATION_CLUSTER_INTERVAL_SECONDS="0",
                       CLOCK_TICK_SECONDS="0.2", MAINTENANCE_HOLD_MAX_S="0")
    with stack.client() as api:
        sent = store_many(api, 14, "wiped")
        before = {m: api.get(f"/memory/{m}").json()["memory"] for m in sent}
        stack_graph(stack).query("MATCH (m) DETACH DELETE m")  # the graph comes back empty
        assert api.get("/health").json()["memory_count"] == 0

        clock = subprocess.Popen([sys.executable, "-m", "ops.clock"], cwd=ROOT, env=stack.env(),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_until(lambda: len(sync_runs(api, "refused")) >= 2, timeout=90, message="two refused scheduled syncs")
            refused = sync_runs(api, "refused")[0]
            assert "no memories" in refused["reason"] and refused["counts"]["orphan_vector"] == 14, refused
            health = api.get("/health").json()
            assert health["vector_count"] == 14  # nothing deleted
            assert health["status"] == "degraded"
            guard = health["drift"]["sync_guard"]
            assert guard["status"] == "tripped" and guard["orphans"] == 14 and guard["quarantined"] == 0, guard
            assert metric(api, "mempipe_sync_guard_tripped") == 1.0
            assert metric(api, "mempipe_sync_guard_orphans") == 14.0

            dry = api.post("/admin/sync/recover", headers=ADMIN, json={"dry_run": True})
            assert dry.status_code == 200 and dry.json()["restored_from_vectors"] == 14, dry.text
            assert api.get("/health").json()["memory_count"] == 0  # a dry run restores nothing
            assert api.post("/admin/sync/recover", json={}).status_code == 403  # admin only

            recovered = api.post("/admin/sync/recover", headers=ADMIN, json={})
            assert recovered.status_code == 200, recovered.text
            assert recovered.json()["restored_from_vectors"] == 14 and recovered.json()["recover"]["status"] == "complete"
            assert_every_memory_back(api, sent, before)
            hit = api.get("/recall", params={"query": "wiped memory number 9 about topic 63", "tags": "n9", "limit": 1}).json()
            assert hit["results"] and hit["results"][0]["memory"]["content"] == sent[next(iter(
                m for m, b in sent.items() if b["tags"][1] == "n9"))]["content"]
            assert api.get("/health").json()["drift"]["sync_guard"]["status"] == "ok"

            # the clock's next syncs find nothing to refuse and nothing to delete
            completed = len(sync_runs(api, "complete"))
            wait_until(lambda: len(sync_runs(api, "complete")) > completed, timeout=60, message="a clean scheduled sync")
        finally:
            clock.terminate()
            clock.wait(10)
        health = api.get("/health").json()
        assert health["memory_count"] == 14 and health["vector_count"] == 14 and health["status"] == "healthy", health
        assert metric(api, "mempipe_sync_guard_tripped") == 0.0


def test_orphans_within_bounds_are_quarantined_before_deletion_and_recoverable(serving_stack):
    stack = serving_stack()
    with stack.client() as api:
        sent = store_many(api, 6, "stray")
        before = {m: api.get(f"/memory/{m}").json()["memory"] for m in sent}
        lost = next(iter(sent))
        stack_graph(stack).query("MATCH (m:Memory {id: $id}) DETACH DELETE m", {"id": lost})  # one node lost

        repaired = api.post("/admin/sync", headers=ADMIN, json={})
        assert repaired.status_code == 200 and repaired.json()["sync"]["status"] == "complete", repaired.text
        assert repaired.json()["sync"]["counts"]["quarantined"] == 1
        wait_until(lambda: api.get("/health").json()["vector_count"] == 5, message="orphan point deleted")
        assert api.get("/health").json()["drift"]["sync_guard"] == {"status": "ok", "quarantined": 1}
        assert metric(api, "mempipe_sync_quarantined_points") == 1.0
        assert api.get("/admin/sync/quarantine").status_code == 403  # admin only
        held = api.get("/admin/sync/quarantine", headers=ADMIN).json()
        assert held["count"] == 1 and held["next_after"] is None, held
        assert held["entries"][0]["memory_id"] == lost and held["entries"][0]["content"] == sent[lost]["content"]
        assert held["entries"][0]["reason"] == "orphan_vector"

        recovered = api.post("/admin/sync/recover", headers=ADMIN, json={}).json()
        assert recovered["restored_from_quarantine"] == 1 and recovered["restored_from_vectors"] == 0, recovered
        assert api.get("/admin/sync/quarantine", headers=ADMIN).json() == {"status": "success", "count": 0,
                                                                            "entries": [], "next_after": None}
        assert_every_memory_back(api, sent, before)
        wait_until(lambda: (h := api.get("/health").json())["vector_count"] == 6 and h["drift"]["sync_guard"]["quarantined"] == 0,
                   message="point re-embedded, quarantine empty")
        body = sent[lost]
        hit = api.get("/recall", params={"query": body["content"], "tags": body["tags"][1], "limit": 1}).json()["results"]
        assert hit and hit[0]["id"] == lost and hit[0]["match_type"] == "vector"


def test_a_graph_lost_whole_reads_as_empty_is_refused_and_recovered_with_its_indexes(serving_stack):
    stack = serving_stack()
    with stack.client() as api:
        sent = store_many(api, 5, "vanished")
        before = {m: api.get(f"/memory/{m}").json()["memory"] for m in sent}
        stack_graph(stack).delete()  # the graph key itself is gone (a lost volume, a wrong FALKORDB_GRAPH)
        health = api.get("/health").json()
        assert health["falkordb"] == "connected" and health["memory_count"] == 0, health

        refused = api.post("/admin/sync", headers=ADMIN, json={})
        assert refused.status_code == 200, refused.text
        run = refused.json()["sync"]
        assert run["status"] == "refused" and "no memories" in run["reason"], run
        assert refused.json()["status"] == "refused" and refused.json()["reason"] == run["reason"]
        assert api.get("/health").json()["vector_count"] == 5

        recovered = api.post("/admin/sync/recover", headers=ADMIN, json={}).json()
        assert recovered["restored_from_vectors"] == 5, recovered
        assert_every_memory_back(api, sent, before)
        keyword = api.get("/recall", params={"query": "vanished", "limit": 10}).json()
        assert {r["id"] for r in keyword["results"]} == set(sent), keyword  # the full-text index is back too
        after = api.post("/admin/sync", headers=ADMIN, json={}).json()["sync"]
        assert after["status"] == "complete" and not after["counts"].get("orphan_vector"), after
        assert api.get("/health").json()["drift"]["sync_guard"] == {"status": "ok", "quarantined": 0}


def test_a_sync_over_a_graph_that_does_not_exist_and_no_vectors_completes(serving_stack):
    stack = serving_stack()
    stack_graph(stack).delete()  # nothing was ever written: no orphan, nothing to refuse
    with stack.client() as api:
        run = api.post("/admin/sync", headers=ADMIN, json={}).json()["sync"]
        assert run["status"] == "complete", run
