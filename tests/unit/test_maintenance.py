import math
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import fakeredis
import numpy as np

from ops.clock import scheduled_jobs
from pipeline.config import Settings
from pipeline.maintenance.cluster import cluster_count, fit_centres, summarise
from pipeline.maintenance.policy import ARCHIVE, DELETE, KEEP, PROTECTED, DecayPolicy, ForgetPolicy
from pipeline.maintenance.runs import COMPLETE, SKIPPED, RunStore, merge_steps
from pipeline.maintenance.sync import payload_drift

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def memory(days_old: float, importance=0.0, confidence=0.5, type_="Context", **extra):
    return {"timestamp": (NOW - timedelta(days=days_old)).isoformat(), "importance": importance,
            "confidence": confidence, "type": type_, **extra}


def test_decay_is_exponential_in_age_with_an_importance_floor():
    policy = DecayPolicy(rate_per_day=0.01, access_weight=0.8, relation_boost=0.3, importance_floor=0.5)
    assert policy.relevance(memory(0), 0, NOW) == 0.75  # fresh: quality 0.75
    assert math.isclose(policy.relevance(memory(200), 0, NOW), math.exp(-2) * 0.75, abs_tol=1e-6)
    assert policy.relevance(memory(400, importance=0.9), 0, NOW) == 0.45  # floor: importance x 0.5
    # relations raise it (saturating at 10), a recent access revives it
    assert policy.relevance(memory(200), 10, NOW) > policy.relevance(memory(200), 5, NOW) > policy.relevance(memory(200), 0, NOW)
    accessed = memory(400, last_accessed=(NOW - timedelta(days=1)).isoformat())
    assert math.isclose(policy.relevance(accessed, 0, NOW), 0.8 * math.exp(-0.01) * 0.75, abs_tol=1e-6)


def test_forget_verdicts_respect_protection():
    policy = ForgetPolicy(archive_below=0.2, delete_below=0.05, grace_days=30, protected_importance=0.8,
                          protected_types=frozenset({"Decision", "Insight", "MetaPattern"}))
    assert policy.verdict(memory(400), 0.01, NOW) == DELETE
    assert policy.verdict(memory(400), 0.1, NOW) == ARCHIVE
    assert policy.verdict(memory(400, archived=True), 0.1, NOW) == KEEP  # already archived
    assert policy.verdict(memory(400), 0.5, NOW) == KEEP
    assert policy.verdict(memory(10), 0.01, NOW) == PROTECTED  # grace period
    assert policy.verdict(memory(400, importance=0.9), 0.01, NOW) == PROTECTED
    assert policy.verdict(memory(400, type_="Decision"), 0.01, NOW) == PROTECTED
    assert policy.verdict(memory(400, type_="MetaPattern"), 0.01, NOW) == PROTECTED


def test_payload_drift_names_the_fields_that_disagree():
    expected = {"tags": ["a"], "importance": 0.5, "type": "Context", "archived": False}
    assert payload_drift(expected, {**expected}) == []
    assert payload_drift(expected, {**expected, "archived": None}) == []  # missing == false
    assert payload_drift(expected, {**expected, "tags": ["b"], "importance": 0.5000000001}) == ["tags"]
    assert payload_drift(expected, {k: v for k, v in expected.items() if k != "importance"}) == ["importance"]
    # the relevance score is the node's alone: an old payload's copy is not drift
    assert payload_drift(expected, {**expected, "relevance_score": 0.3}) == []


def test_merge_steps_sums_counts_and_caps_samples():
    merged = merge_steps([{"counts": {"a": 2}, "samples": {"a": ["1", "2"]}},
                          {"counts": {"a": 20, "b": 1}, "samples": {"a": [str(i) for i in range(20)]}}])
    assert merged["counts"] == {"a": 22, "b": 1}
    assert len(merged["samples"]["a"]) == 10 and merged["samples"]["a"][:2] == ["1", "2"]


def test_run_store_lock_history_and_redelivered_steps():
    runs = RunStore(fakeredis.FakeRedis(), history_size=5, lock_ttl_seconds=3600)
    runs.create("r1", "decay", False, "clock")
    runs.create("r2", "decay", False, "api")
    first, second = runs.get("r1"), runs.get("r2")
    assert runs.start(first) and runs.start(first)  # a redelivered start keeps its own lock
    assert not runs.start(second)  # one decay at a time
    runs.finish(second, SKIPPED, "busy")
    runs.record_step("r1", 0, 0, {"scored": 5}, {})
    runs.record_step("r1", 0, 0, {"scored": 5}, {})  # redelivered: overwrites, never doubles
    runs.record_step("r1", 0, 1, {"scored": 3}, {})
    assert runs.finish(first, COMPLETE)["counts"] == {"scored": 8}
    runs.finish(first, COMPLETE)  # a duplicate finish adds no second history entry
    assert [v["run_id"] for v in runs.history()] == ["r1", "r2"]
    runs.create("r3", "decay", False, "clock")
    assert runs.start(runs.get("r3"))  # the lock was released


def test_cluster_fit_recovers_separated_groups():
    rng = np.random.default_rng(1)
    dims = 32
    groups = []
    for axis in range(3):
        base = np.zeros(dims)
        base[axis] = 1
        groups.append(base + rng.normal(0, 0.05, (6, dims)))
    data = np.vstack(groups)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    centres = fit_centres(data.astype(np.float32), cluster_count(len(data), 6, 10))
    labels = (data @ centres.T).argmax(axis=1)
    assert [len(set(labels[i * 6:(i + 1) * 6])) for i in range(3)] == [1, 1, 1]
    assert len(set(labels)) == 3
    assert cluster_count(100_000, 8, 200) == 200 and cluster_count(2, 8, 200) == 1


def test_summary_names_shared_tags_and_frequent_terms():
    members = [{"content": "Postgres vacuum tuning for large tables", "tags": ["db", "ops"]},
               {"content": "Postgres autovacuum settings changed", "tags": ["db"]},
               {"content": "Vacuum freeze on Postgres replicas", "tags": ["db", "x"]}]
    text, tags = summarise(members, 3)
    assert tags == ["db"] and "postgres" in text and text.startswith("Pattern across 3 memories tagged db")


def test_clock_schedules_cycles_from_settings():
    jobs = {j.name: j.interval_seconds for j in scheduled_jobs(Settings())}
    assert jobs == {"sync": 3600, "decay": 86400, "creative": 604800, "cluster": 2592000}  # forget is opt-in
    jobs = {j.name: j.interval_seconds for j in scheduled_jobs(Settings(consolidation_forget_interval_seconds=60, sync_interval_seconds=0))}
    assert "forget" in jobs and "sync" not in jobs


def test_collection_registry_records_live_plans_a_target_and_switches_once():
    from pipeline.vectors.registry import CollectionRegistry

    client = fakeredis.FakeRedis()
    first = CollectionRegistry(client, Settings(embedding_provider="hash"), cache_seconds=0)
    assert first.state().live.name == "memories" and first.state().live.dims == 384 and not first.migration_needed()
    # a process configured for another size sees the recorded live collection, and the need to migrate
    resized = CollectionRegistry(client, Settings(embedding_provider="hash", vector_size=64), cache_seconds=0)
    assert resized.state().live.dims == 384 and resized.migration_needed()
    target = resized.plan_target("run-1")
    assert target.name == "memories-v1-64d" and target.dims == 64
    assert resized.plan_target("run-1") == target  # a redelivered step gets the same target
    assert [s.name for s in first.state().writable] == ["memories", "memories-v1-64d"]  # every process writes both
    assert resized.switch("run-2") is None  # not that run's target
    previous = resized.switch("run-1")
    assert previous.name == "memories" and previous.dims == 384
    assert resized.switch("run-1") is None  # once
    assert resized.state().live == target and resized.state().target is None and not resized.migration_needed()
    assert resized.plan_target("run-3").name == "memories-v2-64d"
    assert resized.abandon("run-x") is None and resized.abandon("run-3").name == "memories-v2-64d"
    assert resized.state().target is None


def test_cluster_sample_is_fitted_once_from_redis():
    from pipeline.maintenance.cluster import CANDIDATE_FIELDS, fit_step, sample_step
    from pipeline.maintenance.cycles import RunContext
    from pipeline.maintenance.runs import RunStore, state_key
    from pipeline.vectors.store import VectorRecord

    rng = np.random.default_rng(1)
    vectors = {f"m{i}": VectorRecord(f"m{i}", {"type": "Context"}, list(rng.normal(size=8) + (i % 3) * 5))
               for i in range(40)}
    draws = []

    def run_read(query, params):
        draws.append(params["n"])
        return [[m] for m in list(vectors)[:params["n"]]]

    graph = SimpleNamespace(run_read=run_read)
    settings = Settings(consolidation_cluster_sample=30, consolidation_cluster_target_size=10)
    asked_fields = []

    def retrieve(ids, with_vectors, payload_fields=None):
        asked_fields.append(payload_fields)
        return {i: vectors[i] for i in ids}

    svc = SimpleNamespace(settings=settings, graph=graph, vectors=SimpleNamespace(retrieve=retrieve))
    runs = RunStore(fakeredis.FakeRedis(), 10, 3600)
    runs.create("c1", "cluster", False, "api")
    ctx = RunContext(svc, runs, runs.get("c1"), outbox=None)
    settings.maintenance_page_size = 20
    first = sample_step(ctx, None)
    assert first.counts == {"sampled": 20} and first.cursor == 20
    second = sample_step(ctx, first.cursor)
    assert second.counts == {"sampled": 10} and second.cursor is None
    assert sample_step(ctx, first.cursor).counts == {"sampled": 10}  # a redelivered page replaces itself
    assert sample_step(ctx, None).counts == {"sampled": 20} and len(draws) == 1  # the first page too, from the first draw
    assert runs.redis.hlen(state_key("c1", "sample")) == 2
    assert asked_fields == [CANDIDATE_FIELDS] * 4  # the page's vectors and the fields the check reads, no more
    assert fit_step(ctx, None).counts == {"fitted_clusters": 3}
    centres = runs.redis.get(state_key("c1", "centres"))
    assert not runs.redis.exists(state_key("c1", "sample"))  # the sample goes once the centres are kept
    assert not runs.redis.exists(state_key("c1", "sample_ids"))
    assert fit_step(ctx, None).counts == {} and runs.redis.get(state_key("c1", "centres")) == centres  # redelivered


def test_cluster_candidates_leave_out_archived_and_excluded_points_from_either_payload():
    from pipeline.maintenance.cluster import _is_candidate

    excluded = frozenset({"MetaPattern"})
    assert _is_candidate({"memory_id": "m", "lifecycle": "active", "type": "Context"}, excluded)
    assert not _is_candidate({"memory_id": "m", "lifecycle": "archived"}, excluded)  # assign's selected fields
    assert not _is_candidate({"memory_id": "m", "archived": True}, excluded)  # a whole payload
    assert not _is_candidate({"memory_id": "m", "type": "MetaPattern"}, excluded)
