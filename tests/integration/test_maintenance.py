"""Maintenance over the real stack: hand-built graphs whose right answer is known."""

from __future__ import annotations

import io
import math
import tarfile
import time
from datetime import datetime, timedelta, timezone

import pytest
import redis
from falkordb import FalkorDB

from pipeline.graph import GraphStore
from pipeline.records import MemoryRecord
from pipeline.vectors import EdgeVectorStore, VectorPoint, vector_payload
from ops.bench.stack import ADMIN_TOKEN, Stack, shard_changes, wait_until
from tests.graph_helpers import stack_graph

pytestmark = pytest.mark.integration
DIMS = 384
ADMIN = {"X-Admin-Token": ADMIN_TOKEN}


def axis(*weights: tuple[int, float]) -> list[float]:
    vector = [0.0] * DIMS
    for index, weight in weights:
        vector[index] = weight
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


def ago(days: float) -> str:
    return (datetime.now(timezone.utc) - timedelta(days=days)).isoformat()


def store(api, content: str, **fields) -> str:
    response = api.post("/memory", json={"content": content, **fields})
    assert response.status_code in (201, 202), response.text  # 202: slower than the wait bound; settle() waits
    return response.json()["memory_id"]


def settle(api, expected_memories: int) -> None:
    wait_until(lambda: (h := api.get("/health").json())["memory_count"] == expected_memories
               and h["vector_count"] == expected_memories, timeout=60, message="stores settled")


def consolidate(api, mode: str, dry_run: bool) -> dict:
    # forgetting for real deletes memories: the admin token, as forgetting is off by default
    headers = ADMIN if mode == "forget" and not dry_run else None
    response = api.post("/consolidate", json={"mode": mode, "dry_run": dry_run}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["consolidation"]["runs"][mode]


def test_decay_and_forget_known_answers(serving_stack):
    stack = serving_stack(EDGE_FLUSH_INTERVAL_S="0.2")

    with stack.client() as api:
        base = {"type": "Context", "confidence": 0.5}
        ids = {
            "fresh": store(api, "fresh note", importance=0.3, tags=["d"], **base),
            "faded": store(api, "faded note", importance=0.0, timestamp=ago(400), tags=["d"], **base),
            "fading": store(api, "fading note", importance=0.2, timestamp=ago(200), tags=["d"], **base),
            "important": store(api, "important old note", importance=0.9, timestamp=ago(400), tags=["d"], **base),
            "decision": store(api, "old decision", importance=0.0, timestamp=ago(400), tags=["d"], type="Decision", confidence=0.5),
            "young": store(api, "young low note", importance=0.0, timestamp=ago(10), tags=["d"], **base),
        }
        settle(api, 6)

        dry = consolidate(api, "forget", dry_run=True)
        assert dry["status"] == "complete" and dry["dry_run"] is True
        assert dry["counts"]["deleted"] == 1 and dry["samples"]["deleted"] == [ids["faded"]]
        assert dry["counts"]["archived"] == 1 and dry["samples"]["archived"] == [ids["fading"]]
        assert dry["counts"]["protected"] == 4  # fresh and young (grace), important, decision
        assert api.get(f"/memory/{ids['faded']}").status_code == 200  # a dry run changes nothing
        assert not api.get(f"/memory/{ids['fading']}").json()["memory"].get("archived")
        assert "relevance_score" not in api.get(f"/memory/{ids['fresh']}").json()["memory"]

        # The web flushes the shard, and records its changes, within EDGE_FLUSH_INTERVAL_S of a write.
        wait_until(lambda: shard_changes(stack.data_dir) == 6, timeout=10, message="the six upserts flushed")

        decay = consolidate(api, "decay", dry_run=False)
        assert decay["counts"]["scored"] == 6 and decay["counts"]["changed"] == 6  # none had a score yet
        expected = {"fresh": 0.75, "fading": max(0.1, math.exp(-2.0) * 0.75), "important": 0.45,
                    "faded": math.exp(-4.0) * 0.75}
        for name, value in expected.items():
            got = api.get(f"/memory/{ids[name]}").json()["memory"]["relevance_score"]
            assert got == pytest.approx(value, abs=2e-3), name
        # The score stays on the node: a payload write would move the point out of its index.
        wait_until(lambda: (q := api.get("/health").json()["queues"]) and q["vectors"] == q["maintenance"] == 0,
                   message="the vector and maintenance queues empty")
        time.sleep(10 * 0.2)
        assert shard_changes(stack.data_dir) == 6
        # A second run seconds later moves no score by CHANGE_EPSILON, so it writes no node.
        written_at = dict(stack_graph(stack).query("MATCH (m:Memory) RETURN m.id, m.relevance_at").result_set)
        assert len(written_at) == 6 and None not in written_at.values()
        again = consolidate(api, "decay", dry_run=False)
        assert again["counts"]["scored"] == 6 and "changed" not in again["counts"], again
        assert dict(stack_graph(stack).query("MATCH (m:Memory) RETURN m.id, m.relevance_at").result_set) == written_at
        # Recall reads it from the graph for a vector hit, in the memory and in its score
        # components. (Recall touches last_accessed, which revives a memory: ask for the
        # protected one only.)
        hit = api.get("/recall", params={"query": "important old note", "tags": "d", "limit": 1}).json()["results"][0]
        assert hit["id"] == ids["important"] and hit["source"] == "qdrant", hit
        assert hit["memory"]["relevance_score"] == pytest.approx(expected["important"], abs=2e-3)
        assert hit["score_components"]["relevance"] == pytest.approx(expected["important"], abs=2e-3)

        refused = api.post("/consolidate", json={"mode": "forget", "dry_run": False})  # the API token alone
        assert refused.status_code == 403 and refused.json()["code"] == 403, refused.text
        assert api.get(f"/memory/{ids['faded']}").status_code == 200
        forget = consolidate(api, "forget", dry_run=False)
        assert forget["counts"].get("deleted") == 1 and forget["counts"].get("archived") == 1, forget
        wait_until(lambda: api.get(f"/memory/{ids['faded']}").status_code == 404, message="faded deleted")
        fading = api.get(f"/memory/{ids['fading']}").json()
        assert fading["memory"].get("archived") is True, fading
        # Forget reads the fields it judges by (type, archived among them), not whole memories:
        # an archived memory is not archived again, and the protected ones stay protected.
        again = consolidate(api, "forget", dry_run=True)
        assert again["counts"]["examined"] == 5 and again["counts"]["protected"] == 4, again
        assert "archived" not in again["counts"] and "deleted" not in again["counts"], again
        settle(api, 5)  # the deleted memory's vector is gone too
        for name in ("important", "decision", "young", "fresh"):
            assert api.get(f"/memory/{ids[name]}").status_code == 200
        wait_until(lambda: ids["fading"] not in [r["id"] for r in api.get("/recall", params={"query": "fading note", "tags": "d"}).json()["results"]],
                   message="archived memory out of recall")
        status = api.get("/consolidate/status").json()
        assert {"decay", "cluster", "creative", "sync"} <= set(status["next_runs"])
        assert [h["kind"] for h in status["history"][:5]] == ["forget", "forget", "decay", "decay", "forget"]
        assert all(h["duration_s"] >= 0 for h in status["history"])


def test_cluster_writes_one_meta_pattern_per_group(serving_stack):
    stack = serving_stack(CONSOLIDATION_CLUSTER_TARGET_SIZE="5", CONSOLIDATION_CLUSTER_MIN_SIZE="3",
                       CONSOLIDATION_CLUSTER_MIN_SIMILARITY="0.8")
    groups: dict[int, set[str]] = {}
    with stack.client() as api:
        for group in range(3):
            groups[group] = {
                store(api, f"group {group} item {i}", tags=[f"g{group}"],
                      embedding=axis((group, 1.0), (10 + group * 5 + i, 0.2)))
                for i in range(5)
            }
        loners = [store(api, f"loner {i}", tags=["solo"], embedding=axis((100 + i, 1.0))) for i in range(3)]
        settle(api, 18)

        dry = consolidate(api, "cluster", dry_run=True)
        assert dry["counts"]["clusters"] == 3 and dry["counts"]["members"] == 15
        found = {frozenset(c.split(",")) for c in dry["samples"]["clusters"]}
        assert found == {frozenset(g) for g in groups.values()}
        graph = stack_graph(stack)
        assert graph.query("MATCH (m:Memory {type: 'MetaPattern'}) RETURN count(m)").result_set[0][0] == 0

        run = consolidate(api, "cluster", dry_run=False)
        assert run["counts"]["clusters"] == 3
        rows = graph.query("MATCH (m:Memory)-[:EXEMPLIFIES]->(p:Memory {type: 'MetaPattern'}) RETURN p.id, collect(m.id)").result_set
        assert {frozenset(members) for _, members in rows} == {frozenset(g) for g in groups.values()}
        assert not any(loner in members for _, members in rows for loner in loners)
        # MetaPatterns have vectors (no drift) and stay out of recall and the health counts
        settle(api, 18)
        sync = api.post("/admin/sync", headers=ADMIN, json={"dry_run": True}).json()
        assert all(kind["count"] == 0 for kind in sync["drift"].values()), sync
        results = api.get("/recall", params={"query": "group 1 item", "limit": 20}).json()["results"]
        assert results and all(r["memory"].get("type") != "MetaPattern" for r in results)

        again = consolidate(api, "cluster", dry_run=False)  # a new run replaces the old summaries
        assert again["counts"]["retired_patterns"] == 3
        assert graph.query("MATCH (m:Memory {type: 'MetaPattern'}) RETURN count(m)").result_set[0][0] == 3


def test_creative_links_non_obvious_neighbours_once(serving_stack):
    # Enrichment's SIMILAR_TO would connect the close pairs first (and then they are not
    # "non-obvious"); this test is about the creative cycle alone.
    stack = serving_stack(CONSOLIDATION_CREATIVE_SAMPLE="100", SIMILAR_TO_LIMIT="0")
    with stack.client() as api:
        a = store(api, "alpha seed", tags=["alpha"], embedding=axis((20, 1.0)))
        b = store(api, "beta neighbour", tags=["beta"], embedding=axis((20, 0.8), (21, 0.6)))
        store(api, "alpha sibling", tags=["alpha"], embedding=axis((20, 0.8), (21, -0.6)))  # same scope
        store(api, "dup one", tags=["d1"], embedding=axis((30, 1.0)))
        store(api, "dup two", tags=["d2"], embedding=axis((30, 0.995), (31, 0.0998)))  # near-duplicate
        g = store(api, "gamma", tags=["g1"], embedding=axis((40, 1.0)))
        h = store(api, "gamma linked", tags=["g2"], embedding=axis((40, 0.8), (41, 0.6)))
        store(api, "far away", tags=["far"], embedding=axis((50, 1.0)))
        settle(api, 8)
        graph = stack_graph(stack)
        graph.query("MATCH (x:Memory {id: $g}), (y:Memory {id: $h}) CREATE (x)-[:RELATES_TO]->(y)", {"g": g, "h": h})

        dry = consolidate(api, "creative", dry_run=True)
        assert dry["counts"]["discovered"] == 1
        assert graph.query("MATCH ()-[r:DISCOVERED]->() RETURN count(r)").result_set[0][0] == 0
        run = consolidate(api, "creative", dry_run=False)
        assert run["counts"]["discovered"] == 1
        pairs = graph.query("MATCH (x)-[r:DISCOVERED]->(y) RETURN x.id, y.id, r.strength").result_set
        assert len(pairs) == 1 and {pairs[0][0], pairs[0][1]} == {a, b} and pairs[0][2] == pytest.approx(0.8, abs=1e-3)
        assert consolidate(api, "creative", dry_run=False)["counts"].get("discovered", 0) == 0  # connected now


def _edge_store(stack: Stack) -> EdgeVectorStore:
    store_ = EdgeVectorStore(str(stack.data_dir / "qdrant-edge" / "memories"), DIMS)
    store_.ensure_collection()
    return store_


def _stop_web(stack: Stack) -> None:
    stack.web.terminate()
    stack.web.wait(30)


def test_sync_repairs_injected_drift_both_ways(serving_stack):
    stack = serving_stack()
    with stack.client() as api:
        ids = [store(api, f"sync subject number {i}", tags=["sync", f"n{i}"]) for i in range(6)]
        settle(api, 6)
        before = api.get("/recall", params={"query": "sync subject number 3", "tags": "sync", "limit": 1}).json()["results"]
        assert before[0]["id"] == ids[3]

    _stop_web(stack)  # the web process owns the Edge shard: take it to inject drift
    vectors = _edge_store(stack)
    vectors.delete([ids[3]])  # a memory loses its vector
    orphan = MemoryRecord(id="orphan-1", content="ghost", tags=["sync"], importance=0.5, confidence=None, type="Context",
                          type_source=None, timestamp=ago(1), updated_at=ago(1))
    vectors.upsert([VectorPoint("orphan-1", axis((7, 1.0)), vector_payload(orphan.to_message()))])
    vectors.set_payloads({ids[1]: {"tags": ["wrong"], "tag_prefixes": ["wrong"], "importance": 0.01}})
    vectors.close()
    graph = GraphStore(FalkorDB(port=stack.graph_port), f"memories_{stack.name}")
    node_only = MemoryRecord(id="node-only", content="sync subject without vector", tags=["sync"], importance=0.5,
                             confidence=None, type="Context", type_source=None, timestamp=ago(1), updated_at=ago(1))
    graph.upsert_memories([node_only])
    stack.start_web()

    with stack.client() as api:
        dry = api.post("/admin/sync", headers=ADMIN, json={"dry_run": True})
        assert dry.status_code == 200, dry.text
        drift = dry.json()["drift"]
        assert drift["orphan_vector"] == {"count": 1, "sample_ids": ["orphan-1"]}
        assert drift["payload_mismatch"] == {"count": 1, "sample_ids": [ids[1]]}
        assert sorted(drift["missing_vector"]["sample_ids"]) == sorted([ids[3], "node-only"])
        assert api.get("/health").json()["drift"]["last_sync"]["missing_vector"] == 2

        repaired = api.post("/admin/sync", headers=ADMIN, json={}).json()
        assert repaired["complete"] and repaired["drift"]["missing_vector"]["count"] == 2
        settle(api, 7)
        wait_until(lambda: all(k["count"] == 0 for k in api.post("/admin/sync", headers=ADMIN, json={"dry_run": True}).json()["drift"].values()),
                   message="zero drift after one sync")
        after = api.get("/recall", params={"query": "sync subject number 3", "tags": "sync", "limit": 1}).json()["results"]
        assert after[0]["id"] == ids[3] and after[0]["match_type"] == "vector"
        scoped = api.get("/recall", params={"query": "sync subject number 1", "tags": "n1", "limit": 1}).json()["results"]
        assert scoped and scoped[0]["id"] == ids[1]  # its tag filter works again
        assert api.get("/health").json()["drift"]["count_gap"] == 0


def test_backup_wipe_restore_gives_identical_recall(serving_stack, servers):
    source = serving_stack()
    queries = ["database migration plan", "coffee preferences", "deploy friday"]
    with source.client() as api:
        texts = ["We plan the database migration for March", "She prefers coffee without sugar",
                 "Never deploy on a friday afternoon", "The migration needs a rollback plan",
                 "Coffee machine on floor 3 is broken", "Deploy pipeline takes ten minutes"]
        ids = [store(api, t, tags=["bk", f"t{i}"], importance=0.1 * (i + 1)) for i, t in enumerate(texts)]
        settle(api, 6)
        stack_graph(source).query("MATCH (x:Memory {id: $a}), (y:Memory {id: $b}) CREATE (x)-[:RELATES_TO {strength: 0.7}]->(y)",
                               {"a": ids[0], "b": ids[3]})
        expected = {q: [(r["id"], r["final_score"]) for r in api.get("/recall", params={"query": q, "tags": "bk"}).json()["results"]]
                    for q in queries}
        assert api.get("/backup", headers={"X-Admin-Token": "nope"}).status_code == 403
        assert api.get("/backup", headers=ADMIN, params={"include": "bogus"}).json()["code"] == 400
        response = api.get("/backup", headers=ADMIN)
        assert response.status_code == 200 and response.headers["content-type"] == "application/gzip"
        names = tarfile.open(fileobj=io.BytesIO(response.content)).getnames()
        assert any(n.startswith("falkordb/falkordb_") for n in names) and any(n.startswith("qdrant/qdrant_") for n in names)
    archive = source.data_dir / "snapshot.tar.gz"
    archive.write_bytes(response.content)

    target = serving_stack()  # an empty stack: a wiped deployment
    with target.client() as api:
        assert api.get("/health").json()["memory_count"] == 0
    _stop_web(target)
    restored = target.run_tool("-m", "ops.restore", str(archive), "--wipe")
    assert restored.returncode == 0, restored.stderr
    assert '"nodes":6' in restored.stdout and '"edges":1' in restored.stdout and '"vectors":6' in restored.stdout
    target.start_web()
    with target.client() as api:
        settle(api, 6)
        for q in queries:
            got = [(r["id"], r["final_score"]) for r in api.get("/recall", params={"query": q, "tags": "bk"}).json()["results"]]
            assert [i for i, _ in got] == [i for i, _ in expected[q]], q
            assert [s for _, s in got] == pytest.approx([s for _, s in expected[q]], abs=1e-4)
    edges = stack_graph(target).query("MATCH (x)-[r:RELATES_TO]->(y) RETURN x.id, y.id, r.strength").result_set
    assert edges == [[ids[0], ids[3], 0.7]]


def test_restore_graph_only_archive_reembeds(serving_stack):
    source = serving_stack()
    with source.client() as api:
        ids = [store(api, f"graph only memory {i}", tags=["go"]) for i in range(3)]
        settle(api, 3)
        response = api.get("/backup", headers=ADMIN, params={"include": "falkordb"})
        assert [n.split("/")[0] for n in tarfile.open(fileobj=io.BytesIO(response.content)).getnames()] == ["falkordb"]
    archive = source.data_dir / "graph-only.tar.gz"
    archive.write_bytes(response.content)
    target = serving_stack()
    _stop_web(target)
    restored = target.run_tool("-m", "ops.restore", str(archive))
    assert restored.returncode == 0 and '"reembedded":3' in restored.stdout, restored
    target.start_web()
    with target.client() as api:
        settle(api, 3)
        hit = api.get("/recall", params={"query": "graph only memory 2", "tags": "go", "limit": 1}).json()["results"][0]
        assert hit["id"] == ids[2] and hit["match_type"] == "vector"


def test_two_clocks_run_each_cycle_once_per_interval(serving_stack):
    interval = 2.0
    stack = serving_stack(SYNC_INTERVAL_SECONDS=str(interval), CONSOLIDATION_DECAY_INTERVAL_SECONDS=str(interval),
                       CONSOLIDATION_CREATIVE_INTERVAL_SECONDS="0", CONSOLIDATION_CLUSTER_INTERVAL_SECONDS="0",
                       CLOCK_TICK_SECONDS="0.1")
    import subprocess
    import sys

    from ops.bench.stack import ROOT

    clocks = [subprocess.Popen([sys.executable, "-m", "ops.clock"], cwd=ROOT, env=stack.env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(2)]
    try:
        # Count from the first scheduled runs: on a loaded machine a clock takes seconds to boot.
        started = redis.Redis.from_url(stack.redis_url)
        wait_until(lambda: len(started.hgetall("mempipe:clock:last_run")) == 2, timeout=60, message="clocks running")
        # Running until each cycle has finished three scheduled runs: one per interval is the
        # clocks' promise, so that takes a few intervals, and more if a clock doubled a run.
        with stack.client() as api:
            def finished(kind: str) -> int:
                return sum(1 for h in api.get("/consolidate/status").json()["history"] if h["kind"] == kind)
            wait_until(lambda: min(finished("sync"), finished("decay")) >= 3, timeout=10 * interval,
                       interval=0.2, message="three scheduled runs of each cycle")
    finally:
        for clock in clocks:
            clock.terminate()
        for clock in clocks:
            clock.wait(10)
    stopped = time.time()
    with stack.client() as api:
        wait_until(lambda: all(h["status"] != "running" for h in api.get("/consolidate/status").json()["history"]), message="runs settled")
        history = api.get("/consolidate/status").json()["history"]
    client = redis.Redis.from_url(stack.redis_url)
    for kind in ("sync", "decay"):
        runs = sorted((h for h in history if h["kind"] == kind), key=lambda h: h["params"]["scheduled_at"])
        # skipped = the previous run of that cycle was still going (a slow machine): still one per interval
        assert all(h["trigger"] == "clock" and h["status"] in ("complete", "skipped") for h in runs), runs
        times = [h["params"]["scheduled_at"] for h in runs]
        # At most one run per interval slot while the clocks ran, and it kept running
        # (clock start-up and tick latency on a loaded machine can shift a slot, never add one).
        assert 3 <= len(runs) <= int((stopped - times[0]) // interval) + 1, (kind, len(runs), times, stopped)
        assert all(later - earlier >= interval * 0.9 for earlier, later in zip(times, times[1:])), times
    assert set(client.hgetall("mempipe:clock:last_run")) == {b"sync", b"decay"}  # last runs survive restarts


def test_a_scheduled_run_waits_for_owed_writes_and_a_request_lets_it_go_on(serving_stack):
    from pipeline.actors.consolidate import HOLD_POLL_S
    from pipeline.maintenance.runs import run_key
    from pipeline.tracking import INFLIGHT_KEY

    stack = serving_stack(SYNC_INTERVAL_SECONDS="3600", CONSOLIDATION_DECAY_INTERVAL_SECONDS="0",
                          CONSOLIDATION_CREATIVE_INTERVAL_SECONDS="0", CONSOLIDATION_CLUSTER_INTERVAL_SECONDS="0",
                          CLOCK_TICK_SECONDS="0.2")
    stack.start_enrich_worker()  # as the launcher runs one: enrichment's queue drains, and the hold ends
    import subprocess
    import sys

    from ops.bench.stack import ROOT

    broker = redis.Redis.from_url(stack.redis_url)
    with stack.client() as api:
        for i in range(3):
            store(api, f"held note {i}", tags=["held"])
        settle(api, 3)

        def held_sync() -> dict | None:
            running = [r for r in api.get("/consolidate/status").json()["in_progress"] if r["kind"] == "sync"]
            return running[0] if running and running[0].get("held_s", 0) >= 2 * HOLD_POLL_S else None

        def finished(run_id: str) -> dict | None:
            run = api.get(f"/consolidate/runs/{run_id}").json()["run"]
            return run if run["status"] == "complete" else None

        broker.sadd(INFLIGHT_KEY, "a-write-not-yet-recallable")
        clock = subprocess.Popen([sys.executable, "-m", "ops.clock"], cwd=ROOT, env=stack.env(),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            # Held while a write is owed: running, holding the lock, and not one page walked.
            held = wait_until(held_sync, timeout=60 + 4 * HOLD_POLL_S, message="a scheduled sync held back")
            assert held["trigger"] == "clock" and held["status"] == "running"
            assert broker.hlen(run_key(held["run_id"]) + ":steps") == 0
            # The held step waits in a delay queue: /health shows it as delayed work.
            wait_until(lambda: sum(api.get("/health").json()["delayed"].values()) >= 1, timeout=4 * HOLD_POLL_S,
                       message="the held step counted under /health's delayed")
            broker.srem(INFLIGHT_KEY, "a-write-not-yet-recallable")  # the write path has caught up
            done = wait_until(lambda: finished(held["run_id"]), timeout=60, message="the held sync run once idle")
            assert done["held_s"] >= 2 * HOLD_POLL_S and done["counts"]["vectors_checked"] == 3

            # Scheduled again while a write is owed; a request for a sync lets it go on at once.
            broker.sadd(INFLIGHT_KEY, "a-write-not-yet-recallable")
            broker.hdel("mempipe:clock:last_run", "sync")
            again = wait_until(lambda: (r := held_sync()) and r["run_id"] != held["run_id"] and r,
                               timeout=60 + 4 * HOLD_POLL_S, message="a second scheduled sync held back")
            response = api.post("/admin/sync", headers=ADMIN, json={})
            assert response.status_code == 409 and again["run_id"] in response.text, response.text
            released = wait_until(lambda: finished(again["run_id"]), timeout=60, message="the released sync run")
            assert broker.sismember(INFLIGHT_KEY, "a-write-not-yet-recallable")  # it ran with the write still owed
            assert released["trigger"] == "clock" and released["counts"]["vectors_checked"] == 3
        finally:
            clock.terminate()
            clock.wait(10)
            broker.srem(INFLIGHT_KEY, "a-write-not-yet-recallable")


def test_overdue_scheduled_cycles_run_one_after_another(serving_stack):
    import subprocess
    import sys

    from ops.bench.stack import ROOT
    from pipeline.actors.consolidate import HOLD_POLL_S
    from pipeline.maintenance.runs import RunStore

    stack = serving_stack(SYNC_INTERVAL_SECONDS="0", CONSOLIDATION_DECAY_INTERVAL_SECONDS="3600",
                          CONSOLIDATION_CREATIVE_INTERVAL_SECONDS="3600", CONSOLIDATION_CLUSTER_INTERVAL_SECONDS="3600",
                          CLOCK_TICK_SECONDS="0.2")
    stack.start_enrich_worker()  # the pipeline goes idle, so only the runs ahead hold one back
    # A run that started before the clock's holds all three back until it ends: without it the
    # first run can finish before the next one's first step, and nothing would have to wait.
    runs_store = RunStore(redis.Redis.from_url(stack.redis_url), history_size=50, lock_ttl_seconds=600)
    runs_store.create("planted-earlier-run", "sync", False, "request")
    planted = runs_store.get("planted-earlier-run")
    assert planted is not None and runs_store.start(planted)

    with stack.client() as api:
        for i in range(3):
            store(api, f"overdue note {i}", tags=["overdue"])
        settle(api, 3)
        wait_until(lambda: not any(api.get("/health").json()["queues"].values()), timeout=60, message="pipeline idle")
        clock = subprocess.Popen([sys.executable, "-m", "ops.clock"], cwd=ROOT, env=stack.env(),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            def all_held() -> list[dict] | None:
                going = [r for r in api.get("/consolidate/status").json()["in_progress"] if r["trigger"] == "clock"]
                return going if len(going) == 3 and all(r.get("held_s", 0) >= HOLD_POLL_S for r in going) else None

            wait_until(all_held, timeout=60 + 4 * HOLD_POLL_S, message="three overdue cycles held behind the earlier run")
            runs_store.finish(planted)

            def settled() -> list[dict] | None:
                runs = [h for h in api.get("/consolidate/status").json()["history"] if h["trigger"] == "clock"]
                return runs if len(runs) == 3 and all(r["status"] == "complete" for r in runs) else None

            # Each run after the first waits at least one poll for the one before it.
            runs = wait_until(settled, timeout=60 + 8 * HOLD_POLL_S, message="three overdue cycles completed")
        finally:
            clock.terminate()
            clock.wait(10)
    by_start = sorted(runs, key=lambda r: (r["started_at"], r["run_id"]))
    assert {r["kind"] for r in runs} == {"decay", "creative", "cluster"}
    assert sorted(runs, key=lambda r: r["finished_at"]) == by_start  # finished in the order they started


def test_by_tag_routes_and_dead_letter_admin(serving_stack):
    stack = serving_stack(ACTOR_MAX_RETRIES="0")
    with stack.client() as api:
        keep = store(api, "keeper", tags=["keep"])
        doomed = [store(api, f"doomed {i}", tags=["Doom", "x"]) for i in range(3)]
        listed = api.get("/memory/by-tag", params={"tags": "doom", "limit": 2}).json()
        assert listed["count"] == 2 and listed["has_more"] is True and listed["tags"] == ["doom"]
        assert api.get("/memory/by-tag").json() == {"status": "error", "code": 400, "message": "tags: at least one tag is required"}
        assert api.get("/memory/by-tag", params={"tags": "x", "tag_mode": "some"}).json()["code"] == 400
        settle(api, 4)
        deleted = api.request("DELETE", "/memory/by-tag", params={"tags": ["doom"]}).json()
        assert deleted == {"status": "success", "tags": ["doom"], "deleted_count": 3}
        # the count is what was deleted: the nodes are gone when the answer comes
        assert all(api.get(f"/memory/{m}").status_code == 404 for m in doomed)
        assert stack_graph(stack).query("MATCH (m:Memory) RETURN count(m)").result_set[0][0] == 1
        assert api.request("DELETE", "/memory/by-tag", params={"tags": ["doom"]}).json()["deleted_count"] == 0
        settle(api, 1)  # and their vectors follow through the vectors queue
        assert api.get(f"/memory/{keep}").status_code == 200

        assert api.post("/consolidate", json={"mode": "everything"}).json()["code"] == 400
        assert api.post("/consolidate", json={"dry_run": "yes"}).json()["code"] == 400
        assert api.post("/admin/reembed", headers=ADMIN, json={"batch_size": 0}).json()["code"] == 400
        assert api.post("/admin/sync", json={}).status_code == 403  # admin token needed

        from pipeline.broker import build_broker
        from pipeline.config import Settings

        broker = build_broker(Settings(redis_url=stack.redis_url))
        broker.actors.clear()
        import dramatiq

        broker.enqueue(dramatiq.Message(queue_name="maintenance", actor_name="start_cycle", args=("no-such-cycle",), kwargs={}, options={}))
        wait_until(lambda: api.get("/admin/deadletters", headers=ADMIN).json()["count"] == 1, message="dead-lettered")
        dead = api.get("/admin/deadletters", headers=ADMIN, params={"queue": "maintenance"}).json()["dead_letters"][0]
        assert dead["actor"] == "start_cycle" and dead["queue"] == "maintenance"
        detail = api.get(f"/admin/deadletters/maintenance/{dead['id']}", headers=ADMIN).json()["dead_letter"]
        assert detail["args"] == ["no-such-cycle"] and detail["actor"] == "start_cycle"
        assert api.get("/admin/deadletters/maintenance/nope", headers=ADMIN).json()["code"] == 404
        assert api.post("/admin/deadletters/replay", headers=ADMIN, json={"queue": "maintenance"}).json()["replayed"] == 1
        wait_until(lambda: api.get("/admin/deadletters", headers=ADMIN).json()["count"] == 1, message="failed again")
        assert api.request("DELETE", "/admin/deadletters", headers=ADMIN, params={"queue": "maintenance"}).json()["purged"] == 1
        assert api.get("/admin/deadletters", headers=ADMIN).json()["count"] == 0

        reembed = api.post("/admin/reembed", headers=ADMIN, json={"batch_size": 10, "force": True}).json()
        assert reembed["status"] == "complete" and reembed["processed"] == 1


@pytest.fixture()
def scratch_graph(servers):
    """A graph of its own with the schema in place: (raw handle for setup, GraphStore); dropped after."""
    name = f"scratch_{time.time_ns()}"
    raw = FalkorDB(port=servers.graph.port).select_graph(name)
    graph = GraphStore(FalkorDB(port=servers.graph.port), name)
    graph.ensure_schema()
    yield raw, graph
    raw.delete()


def test_graph_walk_is_keyset_paged_and_sees_every_memory_once(scratch_graph):
    """Internal-id keyset pages: every Memory once, across gaps (deleted nodes, other labels)."""
    from pipeline.maintenance import graph_ops

    raw, graph = scratch_graph
    for block in range(5):  # memories interleaved with other nodes, then holes punched in both
        raw.query("UNWIND range(0, 199) AS i CREATE (:Memory {id: 'm-' + toString($b * 1000 + i)})", {"b": block})
        raw.query("UNWIND range(0, 299) AS i CREATE (:Other {n: i})")
    raw.query("MATCH (m:Memory) WHERE m.id ENDS WITH '7' DELETE m")
    expected = {row[0] for row in raw.query("MATCH (m:Memory) RETURN m.id").result_set}
    assert len(expected) == 900

    seen, cursor, pages = [], None, 0
    while True:
        memories, cursor = graph_ops.page_memories(graph, cursor, 64)
        assert len(memories) <= 64
        seen += [m["id"] for m in memories]
        pages += 1
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) and set(seen) == expected
    assert pages <= 900 // 64 + 2  # pages are full until the end: gaps are skipped within a step
    ids, done = graph_ops.page_ids(graph, None, 10_000)
    assert set(ids) == expected and done is None

    plan = [str(op).strip() for op in raw.explain(graph_ops.PAGE_QUERY, {"after": 10, "upper": 138, "limit": 64})]
    assert any("Node By Label and ID Scan" in op for op in plan), plan  # both bounds inside the scan
    assert not any(op.startswith("Filter") for op in plan), plan  # no filter after the scan


def test_a_page_of_named_fields_holds_only_those_and_relevance_is_written_in_parts(scratch_graph):
    from pipeline.maintenance import graph_ops

    raw, graph = scratch_graph
    raw.query("UNWIND range(0, 9) AS i CREATE (:Memory {id: 'f-' + toString(i), content: 'long text', "
              "importance: toFloat(i) / 10, type: CASE WHEN i = 3 THEN 'MetaPattern' ELSE null END})")
    page, cursor = graph_ops.page_fields(graph, None, 4, ("id", "type", "importance"))
    assert cursor is not None and len(page) == 4
    assert page[0] == {"id": "f-0", "importance": 0.0}  # no content; a property the node lacks is left out
    assert page[3] == {"id": "f-3", "type": "MetaPattern", "importance": 0.3}
    rest, done = graph_ops.page_fields(graph, cursor, 100, ("id", "type"))
    assert done is None and rest == [{"id": f"f-{i}"} for i in range(4, 10)]
    with pytest.raises(ValueError):
        graph_ops.page_fields(graph, None, 4, ("id", "content} RETURN 1 //"))

    scores = {f"f-{i}": i / 100 for i in range(10)}
    writes = []
    run_write = graph.run_write
    graph.run_write = lambda query, params: (writes.append(len(params["rows"])), run_write(query, params))
    graph_ops.set_relevance(graph, scores, "2026-12-07T00:00:00+00:00", rows_per_query=4)
    assert writes == [4, 4, 2]
    stored = dict(raw.query("MATCH (m:Memory) RETURN m.id, m.relevance_score").result_set)
    assert stored == scores


def test_delete_by_tag_counts_what_it_deleted_in_bounded_batches(scratch_graph):
    from pipeline.graph import TagFilter
    from pipeline.tag_delete import delete_by_tag

    raw, graph = scratch_graph

    def make(prefix: str, count: int, tags: list[str]) -> set[str]:
        records = [MemoryRecord(id=f"{prefix}-{i}", content=f"{prefix} {i}", tags=tags, importance=0.5, confidence=None,
                                type="Context", type_source=None, timestamp=ago(1), updated_at=ago(1)) for i in range(count)]
        graph.upsert_memories(records)
        return {r.id for r in records}

    doomed = make("upper", 12, ["Scratch"]) | make("lower", 13, ["scratch", "other"])
    kept = make("prefixed", 4, ["scratch:sub"]) | make("plain", 5, ["keep"])
    raw.query("MATCH (a:Memory {id: 'upper-0'}), (b:Memory {id: 'plain-0'}) CREATE (a)-[:RELATES_TO]->(b)")
    batches, dropped = [], []
    count = delete_by_tag(graph, TagFilter(("SCRATCH",), "any", "exact"), batches.append, dropped.extend, batch=7)
    assert count == 25 and set(dropped) == doomed and len(dropped) == 25
    assert all(len(b) <= 7 for b in batches) and len(batches) == 4
    left = {row[0] for row in raw.query("MATCH (m:Memory) RETURN m.id").result_set}
    assert left == kept  # exact match leaves scratch:sub; the edge went with its node
    assert delete_by_tag(graph, TagFilter(("scratch",), "any", "prefix"), batches.append, dropped.extend, batch=7) == 4


def _restart(stack: Stack, **env: str) -> None:
    stack.stop()
    stack.extra_env.update(env)
    stack.start_web()
    stack.start_worker(processes=1, threads=2)


@pytest.mark.parametrize("backend", ["edge", "server"])
def test_dimension_change_migrates_to_a_new_collection_and_switches_when_complete(serving_stack, backend, tmp_path):
    env = {"SIMILAR_TO_LIMIT": "0", "ENRICHMENT_ENABLED": "false"}
    if backend == "server":  # qdrant-client local mode on disk: one process owns it, as Edge
        env |= {"QDRANT_URL": f"local:{tmp_path / 'qdrant'}", "WEB_WORKER_QUEUES": "all"}
    stack = serving_stack(**env)
    texts = [f"migration subject {i} about {word}" for i, word in enumerate(
        ["apples", "rivers", "engines", "violins", "glaciers", "lanterns", "compilers", "orchards"] * 5)]
    with stack.client() as api:
        ids = [store(api, text, tags=["mig", f"n{i}"]) for i, text in enumerate(texts)]
        settle(api, len(ids))
        before = api.get("/health").json()["vectors"]
        assert before["live"]["dims"] == DIMS and before["migration_needed"] is False

    _restart(stack, VECTOR_SIZE="64")  # the configuration now asks for another dimension
    with stack.client() as api:
        vectors = api.get("/health").json()["vectors"]
        assert vectors["live"]["dims"] == DIMS and vectors["configured_dims"] == 64 and vectors["migration_needed"]

        def recall_ok(i: int, by_vector: bool = True) -> bool:
            hits = api.get("/recall", params={"query": texts[i], "tags": f"n{i}", "limit": 1}).json()["results"]
            return bool(hits) and hits[0]["id"] == ids[i] and (not by_vector or hits[0]["match_type"] == "vector")

        assert recall_ok(3)  # still served from the old collection, with the old embedding
        assert api.post("/admin/reembed", headers=ADMIN, json={"limit": 5}).json()["code"] == 400
        started = api.post("/admin/reembed", headers=ADMIN, params={"wait": "false"}, json={"batch_size": 7})
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        # while it runs: recall keeps working, and a write lands in both collections
        late = store(api, "written during the migration about lanterns", tags=["mig", "late"])
        checks = 0
        while (run := api.get(f"/consolidate/runs/{run_id}").json()["run"])["status"] not in ("complete", "failed"):
            # Recall answers right throughout. Only the answer is checked here: which source ranks
            # a memory first while both collections are written is not this test's point (the
            # switch's own race, a query embedded before it and searched after, is
            # tests/unit/test_vector_router.py); the vector match is checked before and after.
            assert recall_ok(checks % len(ids), by_vector=False), checks
            checks += 1
            time.sleep(0.2)
        assert run["status"] == "complete", run
        assert run["counts"]["processed"] == len(ids) + 1 and checks > 0
        target = run["samples"]["target"][0]
        assert target.endswith("-64d") and run["samples"]["live"] == [target]

        vectors = api.get("/health").json()["vectors"]
        assert vectors["live"]["name"] == target and vectors["live"]["dims"] == 64
        assert not vectors["migration_needed"] and "migrating_to" not in vectors
        settle(api, len(ids) + 1)
        for i in range(0, len(ids), 5):
            wait_until(lambda: recall_ok(i), timeout=10, message=f"recall {i} from the new collection")
        assert api.get("/recall", params={"query": "written during the migration", "tags": "late", "limit": 1}).json()["results"][0]["id"] == late
        sync = api.post("/admin/sync", headers=ADMIN, json={"dry_run": True}).json()
        assert all(kind["count"] == 0 for kind in sync["drift"].values()), sync
        wait_until(lambda: api.get(f"/consolidate/runs/{run_id}").json()["run"]["samples"].get("dropped") == ["memories"],
                   message="old collection dropped")
        assert api.post("/admin/reembed", headers=ADMIN, json={"limit": 5}).json()["status"] == "complete"  # in place again

    stack.stop()  # every memory, exactly once, in the new collection at the new size; the old one is gone
    if backend == "edge":
        assert not (stack.data_dir / "qdrant-edge" / "memories").exists()
        opened = EdgeVectorStore(str(stack.data_dir / "qdrant-edge" / target), 64)
        opened.ensure_collection()
    else:
        from qdrant_client import QdrantClient

        from pipeline.vectors import QdrantServerVectorStore

        client = QdrantClient(path=str(tmp_path / "qdrant"))
        assert not client.collection_exists("memories")
        opened = QdrantServerVectorStore(client, target, 64)
    records, offset = opened.scroll(None, 1000, with_vectors=True)
    assert offset is None and sorted(r.memory_id for r in records) == sorted(ids + [late])
    assert {len(r.vector) for r in records} == {64}
    opened.close()
