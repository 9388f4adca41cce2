"""Enrichment over the real stack: FalkorDB, Dramatiq workers, Qdrant Edge, spaCy, a real HTTP LLM."""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timedelta, timezone

import httpx
import pytest

from tests.fake_llm import FakeLLM
from tests.graph_helpers import stack_graph
from ops.bench.stack import Stack, shard_changes, wait_until

pytestmark = pytest.mark.integration


def scope(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def store(api: httpx.Client, content: str, **fields) -> str:
    response = api.post("/memory", json={"content": content, **fields})
    assert response.status_code in (201, 202), response.text
    return response.json()["memory_id"]


def enriched(api: httpx.Client, memory_id: str, timeout: float = 60.0) -> dict:
    def ready():
        body = api.get(f"/memory/{memory_id}").json()
        return body.get("memory") if body.get("memory", {}).get("enriched_at") else None

    return wait_until(ready, timeout=timeout, message=f"{memory_id} enriched")


def related(api: httpx.Client, memory_id: str, **params) -> list[dict]:
    response = api.get(f"/memories/{memory_id}/related", params=params)
    assert response.status_code == 200, response.text
    return response.json()["related_memories"]


def recall_ids(api: httpx.Client, **params) -> list[str]:
    response = api.get("/recall", params=params)
    assert response.status_code == 200, response.text
    return [r["id"] for r in response.json()["results"]]


def test_entities_type_and_vector_payload(api):
    tag = scope()
    memory_id = store(api, "Sarah's sister is Rachel.", tags=[tag])
    memory = enriched(api, memory_id)
    assert memory["tags"][0] == tag
    assert set(memory["tags"][1:]) == {"entity:people:sarah", "entity:people:rachel"}
    assert memory["metadata"]["entities"] == {"people": ["Sarah", "Rachel"]}
    assert memory["type"] == "Context" and memory["confidence"] == 0.5
    # the entity tags reach the vector index too (what expand_entities searches)
    wait_until(lambda: memory_id in recall_ids(api, query="sister", tags=[tag, "entity:people:rachel"], tag_mode="all"),
               message="entity tag searchable in vectors")
    # re-enrichment replaces, never accumulates
    assert api.post("/enrichment/reprocess", json={"ids": [memory_id]}).json()["count"] == 1
    wait_until(lambda: api.get(f"/memory/{memory_id}").json()["memory"]["enriched_at"] != memory["enriched_at"],
               message="re-enriched")
    again = api.get(f"/memory/{memory_id}").json()["memory"]
    assert sorted(again["tags"]) == sorted(memory["tags"])
    # a client replacing the tags keeps the entity tags enrichment owns
    assert api.patch(f"/memory/{memory_id}", json={"tags": ["renamed"]}).status_code in (200, 202)
    wait_until(lambda: "renamed" in api.get(f"/memory/{memory_id}").json()["memory"]["tags"], message="patched")
    patched = api.get(f"/memory/{memory_id}").json()["memory"]["tags"]
    assert patched == ["renamed", "entity:people:sarah", "entity:people:rachel"]


def test_enrichment_rewrites_only_the_payloads_it_changes(make_stack):
    """A point is written again only when enrichment changed what it holds (here: entity tags).
    Any update moves an indexed point out of its HNSW segment until the next build
    (ops.bench.probe_edge_moves), so a rewrite of an unchanged payload is not free."""
    stack = make_stack(EDGE_FLUSH_INTERVAL_S="0.2")
    stack.start_web()
    stack.start_worker(processes=1, threads=2)
    stack.start_enrich_worker()

    with stack.client() as api:
        tag = scope()
        plain = [store(api, text, tags=[tag]) for text in
                 ("the build is green again", "the deploy went fine", "tests pass on main now")]
        named = store(api, "Sarah's sister is Rachel.", tags=[tag])
        for memory_id in plain:
            assert enriched(api, memory_id)["tags"] == [tag]
        assert "entity:people:rachel" in enriched(api, named)["tags"]
        wait_until(lambda: not any((api.get("/health").json()["queues"] or {"?": 1}).values()),
                   message="every queue empty, the payload refreshes included")
        # The web flushes the shard, and records its changes, within EDGE_FLUSH_INTERVAL_S of a write.
        wait_until(lambda: shard_changes(stack.data_dir) == 5, timeout=10, message="the shard flushed")
        time.sleep(10 * 0.2)
        assert shard_changes(stack.data_dir) == 5  # four upserts and one payload refresh; before, one refresh per enrichment (8)


def test_multi_hop_sisters_job_through_expand_entities(api):
    """The spec's "What is Sarah's sister's job?", from memories written only via POST /memory."""
    tag = scope()
    seed = store(api, "Sarah's sister is Rachel.", tags=[tag])
    job = store(api, "Rachel works as a dentist in Austin.", tags=[tag])
    store(api, "The team standup moved to ten o'clock.", tags=[tag])
    enriched(api, seed)
    enriched(api, job)
    params = {"query": "What is Sarah's sister's job?", "tags": tag, "limit": 1, "expand_entities": "true",
              "expand_respect_tags": "true"}  # keep the hop inside this test's memories

    def expanded_to_job():
        # Entity expansion searches the vector payloads, which catch up with enrichment a moment after the graph.
        body = api.get("/recall", params=params).json()
        found = {r["id"]: r for r in body["results"] if r["match_type"] == "entity_expansion"}
        return (body, found) if job in found else None

    body, expanded = wait_until(expanded_to_job, timeout=60, message="entity expansion reaching the job memory")
    assert body["results"][0]["id"] == seed
    assert "rachel" in body["entity_expansion"]["entities_found"]
    assert expanded[job]["expanded_from_entity"] == "rachel"
    assert "dentist" in expanded[job]["memory"]["content"]


def test_similar_to_links_near_duplicates_only(api):
    tag = scope()
    a = store(api, "The deploy pipeline runs tests then builds the docker image then ships it", tags=[tag])
    b = store(api, "The deploy pipeline runs tests then builds the docker image then ships it to prod", tags=[tag])
    c = store(api, "Rachel likes green tea in the afternoon", tags=[tag])
    for memory_id in (a, b, c):
        enriched(api, memory_id)
    links = wait_until(lambda: related(api, a, relationship_types="SIMILAR_TO"), message="SIMILAR_TO edge")
    assert [r["id"] for r in links] == [b]
    assert 0.8 <= links[0]["strength"] < 1.0
    assert related(api, b, relationship_types="SIMILAR_TO")[0]["id"] == a  # one symmetric edge
    assert related(api, c, relationship_types="SIMILAR_TO") == []
    assert related(api, a) == []  # system types are opt-in


def test_preceded_by_chain_is_right_even_out_of_order(api):
    conversation = f"conversation:{uuid.uuid4().hex[:8]}"
    base = datetime(2024, 5, 1, tzinfo=timezone.utc)
    at = lambda minutes: (base + timedelta(minutes=minutes)).isoformat()  # noqa: E731
    second = store(api, "second message", tags=[conversation], timestamp=at(2))
    third = store(api, "third message", tags=[conversation], timestamp=at(3))
    enriched(api, second)
    enriched(api, third)
    first = store(api, "first message", tags=[conversation], timestamp=at(1))  # arrives last
    enriched(api, first)
    other = store(api, "elsewhere", tags=[f"conversation:{uuid.uuid4().hex[:8]}"], timestamp=at(2))
    enriched(api, other)

    def outgoing(memory_id):
        return sorted(r["id"] for r in related(api, memory_id, relationship_types="PRECEDED_BY")
                      if r["direction"] == "outgoing")

    wait_until(lambda: outgoing(second) == [first], message="second → first")
    assert outgoing(third) == [second]
    assert outgoing(first) == []
    assert outgoing(other) == []
    chain = related(api, third, relationship_types="PRECEDED_BY", max_depth=2)
    assert [(r["id"], r["depth"]) for r in chain] == [(second, 1), (first, 2)]


def test_exact_duplicates_point_at_the_original(api):
    session = f"session:{uuid.uuid4().hex[:8]}"
    original = store(api, "We chose Postgres for billing.", tags=[session], timestamp="2024-01-01T00:00:00Z")
    copy = store(api, "we chose  postgres for billing", tags=[session], timestamp="2024-01-02T00:00:00Z")
    elsewhere = store(api, "We chose Postgres for billing.", tags=[f"session:{uuid.uuid4().hex[:8]}"])
    enriched(api, original)
    assert enriched(api, copy)["duplicate_of"] == original
    assert "duplicate_of" not in api.get(f"/memory/{original}").json()["memory"]
    assert "duplicate_of" not in enriched(api, elsewhere)
    exact = related(api, copy, relationship_types="SIMILAR_TO")
    assert any(r["id"] == original and r["strength"] == 1.0 for r in exact)
    # recall collapses the pair (once the vector payloads carry duplicate_of too): one result,
    # the other listed in deduped_from
    def collapsed():
        body = api.get("/recall", params={"query": "postgres billing", "tags": session, "limit": 5}).json()
        return body if body["count"] == 1 else None

    body = wait_until(collapsed, timeout=30, message="duplicates collapsed in recall")
    assert body["dedup_removed"] == 1
    shown = body["results"][0]
    assert {shown["id"], *shown["deduped_from"]} == {original, copy}


def test_long_content_gets_an_extractive_summary_recall_returns(api):
    tag = scope()
    content = " ".join(
        f"Sentence {i} of the incident report says the Redis failover took {i} seconds." for i in range(20)
    )
    memory_id = store(api, content, tags=[tag])
    memory = enriched(api, memory_id)
    assert memory["summary_source"] == "extractive" and 0 < len(memory["summary"]) <= 280
    assert all(part.strip(". ") in content for part in memory["summary"].split(". ") if part)
    result = wait_until(lambda: api.get("/recall", params={"query": "incident report failover", "tags": tag}).json()["results"],
                        message="recall")
    wait_until(lambda: api.get("/recall", params={"query": "incident report failover", "tags": tag})
               .json()["results"][0]["memory"].get("summary") == memory["summary"], message="summary in recall")
    assert result[0]["id"] == memory_id


def _link_stamps(stack, source: str, target: str) -> list[tuple]:
    rows = stack_graph(stack).query(
        "MATCH (:Memory {id: $a})-[r:LEADS_TO]->(:Memory {id: $b}) RETURN r.created_at, r.updated_at, r.updated_epoch",
        {"a": source, "b": target}).result_set
    return [tuple(row) for row in rows]


def test_associate_single_batch_and_errors(api, stack):
    tag = scope()
    a, b, c = (store(api, f"{name} note", tags=[tag]) for name in ("alpha", "beta", "gamma"))
    response = api.post("/associate", json={"memory1_id": a, "memory2_id": b, "type": "LEADS_TO", "strength": 0.9})
    assert response.status_code == 201, response.text
    assert response.json()["relation_type"] == "LEADS_TO"
    links = related(api, a)
    assert [(r["id"], r["relation_type"], r["strength"], r["direction"]) for r in links] == [(b, "LEADS_TO", 0.9, "outgoing")]
    [(created, updated, epoch)] = _link_stamps(stack, a, b)
    assert created == updated == links[0]["updated_at"]
    assert datetime.fromisoformat(updated).timestamp() == pytest.approx(epoch)
    # the same association again updates the edge, never adds a second one; created_at stays
    time.sleep(0.01)
    assert api.post("/associate", json={"memory1_id": a, "memory2_id": b, "type": "LEADS_TO", "strength": 0.4}).status_code == 201
    assert [(r["id"], r["strength"]) for r in related(api, a)] == [(b, 0.4)]
    [(created_again, updated_again, epoch_again)] = _link_stamps(stack, a, b)
    assert created_again == created and updated_again > updated and epoch_again > epoch

    batch = api.post("/associate", json={"associations": [
        {"memory1_id": a, "memory2_id": c, "type": "PART_OF", "strength": 0.7},
        {"memory1_id": a, "memory2_id": "no-such-memory", "type": "RELATES_TO"},
        {"memory1_id": b, "memory2_id": b, "type": "RELATES_TO"},
        {"memory1_id": b, "memory2_id": c, "type": "SIMILAR_TO"},
        {"memory1_id": b, "memory2_id": c, "type": "FRIENDS_WITH"},
    ]})
    assert batch.status_code == 207, batch.text
    body = batch.json()
    assert body["status"] == "partial_success" and body["created_count"] == 1 and body["failed_count"] == 4
    assert body["summary"] == "1/5 associations created successfully"
    assert [f["index"] for f in body["failed"]] == [1, 2, 3, 4]
    assert "not found" in body["failed"][0]["error"] and "itself" in body["failed"][1]["error"]
    assert "system-generated" in body["failed"][2]["error"]
    assert {r["id"] for r in related(api, a)} == {b, c}
    assert related(api, c, relationship_types="PART_OF")[0]["direction"] == "incoming"

    ok = api.post("/associate", json={"associations": [{"memory1_id": b, "memory2_id": c, "type": "REINFORCES"}]})
    assert ok.status_code == 201 and ok.json()["status"] == "success"

    for body, status, needle in (
        ({"memory1_id": a, "memory2_id": "ghost"}, 404, "memory2_id"),
        ({"memory1_id": a, "memory2_id": b, "type": "PRECEDED_BY"}, 400, "type"),
        ({"memory1_id": a, "memory2_id": b, "strength": 2}, 400, "strength"),
        ({"memory2_id": b}, 400, "memory1_id"),
        ({"associations": "nope"}, 400, "associations"),
        ({"associations": [{"memory1_id": a, "memory2_id": b}] * 501}, 400, "500"),
    ):
        response = api.post("/associate", json=body)
        assert response.status_code == status, (body, response.text)
        error = response.json()
        assert error["status"] == "error" and error["code"] == status and needle in error["message"]
    malformed = api.post("/associate", content=b"{not json", headers={"Content-Type": "application/json"})
    assert malformed.status_code == 400 and malformed.json()["status"] == "error"


def test_related_validates_its_parameters(api):
    memory_id = store(api, "lonely note", tags=[scope()])
    for params, needle in (({"relationship_types": "BOGUS"}, "relationship_types"), ({"max_depth": 4}, "max_depth"),
                           ({"max_depth": "x"}, "max_depth"), ({"limit": 0}, "limit")):
        response = api.get(f"/memories/{memory_id}/related", params=params)
        assert response.status_code == 400 and needle in response.json()["message"], params
    assert api.get("/memories/missing-id/related").status_code == 404
    assert api.get(f"/memories/{memory_id}/related", params={"limit": 999}).status_code == 200


def test_status_and_reprocess(api):
    memory_id = store(api, "We decided to adopt trunk based development", tags=[scope()])
    enriched(api, memory_id)
    status = api.get("/enrichment/status").json()
    assert status["status"] == "success"
    for key in ("queue_size", "inflight", "pending"):
        assert isinstance(status[key], int)
    assert status["stats"]["processed"] >= 1 and status["stats"]["failed"] == 0
    classification = status["classification"]
    assert classification["pattern_classifications"] >= 1 and classification["llm_attempts"] == 0
    assert set(classification) >= {"llm_attempts", "llm_successes", "fallbacks", "pattern_classifications",
                                   "last_error", "last_error_at"}
    before = status["stats"]["processed"]
    response = api.post("/enrichment/reprocess", params={"ids": f"{memory_id},not-a-memory"})
    assert response.status_code == 202
    assert response.json() == {"status": "queued", "count": 1, "ids": [memory_id], "not_found": ["not-a-memory"]}
    wait_until(lambda: api.get("/enrichment/status").json()["stats"]["processed"] > before, message="reprocessed")
    assert api.post("/enrichment/reprocess", json={"ids": "x"}).status_code == 400
    assert api.post("/enrichment/reprocess").status_code == 400


def test_writes_never_wait_for_enrichment(servers):
    """No enrichment worker at all: writes still answer 201 and are recallable; enrichment waits.

    The waiting work is one small message per write; the enricher, once started, takes the
    queued run of them in one call (ENRICH_DRAIN_MAX_ITEMS), so NER and the graph writes
    see one batch.
    """
    stack = Stack.create(servers)
    stack.start_web()
    stack.start_worker(queues=["persist", "embed"])
    try:
        with stack.client() as api:
            tag = scope()
            memory_id = store(api, "Rachel moved to Denver", tags=[tag])  # 202 while the worker boots
            wait_until(lambda: memory_id in recall_ids(api, query="Rachel Denver", tags=tag), message="recallable")
            assert api.get(f"/memory/{memory_id}").json()["memory"].get("enriched_at") is None
            status = api.get("/enrichment/status").json()
            assert status["pending"] >= 1 and status["queue_size"] >= 1
            conversation = f"conversation_{uuid.uuid4().hex[:8]}"
            base = datetime(2024, 7, 1, tzinfo=timezone.utc)
            turns = [store(api, f"Turn {i}: Rachel asked Tom about Denver", tags=[tag, conversation],
                           timestamp=(base + timedelta(minutes=i)).isoformat()) for i in range(7)]
            wait_until(lambda: api.get("/enrichment/status").json()["queue_size"] >= 8, message="one message per write")

            stack.start_enrich_worker(threads=1)
            memory = enriched(api, memory_id)
            assert "entity:people:rachel" in memory["tags"] and "entity:places:denver" in memory["tags"]
            for turn in turns:
                assert {"entity:people:rachel", "entity:people:tom"} <= set(enriched(api, turn)["tags"])
            wait_until(lambda: api.get("/enrichment/status").json()["pending"] == 0, message="drained")
            log = (stack.data_dir / "worker.log").read_text(errors="replace")
            processed = [line for line in log.splitlines() if '"message processed"' in line and '"enrich_memories"' in line]
            calls = sum(1 for line in processed if '"drained_by"' not in line)
            # 8 messages; the consumer prefetches 2 (threads × 2), the first call drains the rest,
            # and each drained message still logs its own line (its request id is traced)
            assert 1 <= calls <= 3, calls
            assert len(processed) == 8, len(processed)
            for i, turn in enumerate(turns):
                out = [r["id"] for r in related(api, turn, relationship_types="PRECEDED_BY") if r["direction"] == "outgoing"]
                assert out == ([turns[i - 1]] if i else []), i
    finally:
        stack.stop()


@pytest.fixture(scope="module")
def llm_stack(servers):
    fake = FakeLLM(answer_type="Insight", slow_seconds=3.0).start()
    stack = Stack.create(
        servers, classification_model="fake-classifier", llm_api_key="test-key", llm_base_url=fake.base_url,
        llm_timeout_s="0.5", llm_max_attempts="2", summary_min_chars="200",
    )
    stack.start_web()
    stack.start_worker(processes=1, threads=2)
    stack.start_enrich_worker()
    yield stack, fake
    stack.stop()
    fake.stop()


def test_llm_classification_and_summary(llm_stack):
    stack, fake = llm_stack
    with stack.client() as api:
        memory_id = store(api, "The office plants need more light", tags=[scope()])
        memory = enriched(api, memory_id)
        assert (memory["type"], memory["confidence"]) == ("Insight", 0.77)
        explicit = store(api, "Tabs, not spaces", type="Style", tags=[scope()])
        assert enriched(api, explicit)["type"] == "Style"  # a client's type is never overridden
        long_id = store(api, "Quarterly review notes. " * 20, tags=[scope()])
        long_memory = enriched(api, long_id)
        assert long_memory["summary_source"] == "llm" and long_memory["summary"].startswith("LLM summary:")
        # counters are flushed just after the graph write: wait for them, don't race them
        status = wait_until(lambda: (s := api.get("/enrichment/status").json())["classification"]["llm_successes"] >= 2 and s,
                            message="LLM successes counted")
        assert status["config"]["classifier"] == "llm" and status["classification"]["fallbacks"] == 0


def test_llm_failures_fall_back_to_patterns_and_are_counted(llm_stack):
    stack, fake = llm_stack
    with stack.client() as api:
        before = api.get("/enrichment/status").json()["classification"]
        ids = {marker: store(api, f"We decided to use Kafka {marker}", tags=[scope()])
               for marker in ("[slow]", "[429]", "[garbage]", "[badtype]")}
        # long content: its summary is asked of the LLM too, which answers 500 every time
        ids["[500]"] = store(api, "We decided to split the billing service. [500] " * 10, tags=[scope()])
        for marker, memory_id in ids.items():
            memory = enriched(api, memory_id, timeout=90)
            assert memory["type"] == "Decision", marker  # the pattern classifier's answer
        long_memory = enriched(api, ids["[500]"])
        assert long_memory["summary_source"] == "extractive" and 0 < len(long_memory["summary"]) <= 280
        after = wait_until(
            lambda: (c := api.get("/enrichment/status").json()["classification"])["llm_attempts"] - before["llm_attempts"] >= 5 and c,
            message="attempts counted")
        assert after["llm_attempts"] - before["llm_attempts"] == 5
        assert after["fallbacks"] - before["fallbacks"] == 5
        assert after["pattern_classifications"] - before["pattern_classifications"] == 5
        assert after["last_error"] and after["last_error_at"]
        assert fake.calls_with("[429]") == 2 and fake.calls_with("[slow]") == 2  # retried, then fell back
        assert fake.calls_with("[garbage]") == 1
        assert fake.calls_with("[500]") == 4  # classification and summary, each tried twice


def test_llm_rate_limit_is_shared_by_all_enrichment_workers(servers):
    """Two enrichment processes, 2 threads each, one budget: 4 LLM calls per 4 s window.

    Dramatiq's window limiter counts calls in one-second buckets on the broker's Redis, so
    any 4 consecutive buckets hold at most 4 calls: call i+4 comes more than 3 s after call i
    (less the jitter of the HTTP hop). Each process alone would allow 4 per window, and the
    4 threads would send the 12 calls within a second or two.
    """
    fake = FakeLLM(answer_type="Habit").start()
    stack = Stack.create(servers, classification_model="fake-classifier", llm_api_key="test-key",
                         llm_base_url=fake.base_url, llm_rate_limit="4", llm_rate_window_s="4")
    stack.start_web()
    stack.start_worker(processes=1, threads=2)
    try:
        with stack.client() as api:
            marker = f"[rl-{uuid.uuid4().hex[:6]}]"
            ids = [api.post("/memory", params={"wait": "false"},
                            json={"content": f"I walk every morning {marker} {i}", "tags": [scope()]}).json()["memory_id"]
                   for i in range(12)]
            wait_until(lambda: api.get("/enrichment/status").json()["pending"] >= 12, timeout=60, message="enrichment queued")
            stack.start_worker(processes=2, threads=2, queues=["enrich"])
            for memory_id in ids:
                assert enriched(api, memory_id, timeout=90)["type"] == "Habit"
        arrivals = fake.arrival_times(marker)
        assert len(arrivals) == 12
        gaps = [later - earlier for earlier, later in zip(arrivals, arrivals[4:])]
        assert min(gaps) > 2.0, gaps
    finally:
        stack.stop()
        fake.stop()


def test_preceded_by_chain_under_concurrent_out_of_order_writes(api):
    """Many writes at once, timestamps shuffled, two worker threads: still one exact chain."""
    import random

    conversation = f"conversation_{uuid.uuid4().hex[:8]}"
    base = datetime(2024, 6, 1, tzinfo=timezone.utc)
    order = list(range(12))
    random.Random(7).shuffle(order)
    ids: dict[int, str] = {}
    for minute in order:
        response = api.post("/memory", params={"wait": "false"}, json={
            "content": f"turn {minute} of the chat", "tags": [conversation],
            "timestamp": (base + timedelta(minutes=minute)).isoformat()})
        ids[minute] = response.json()["memory_id"]
    for memory_id in ids.values():
        enriched(api, memory_id)

    def chain_ok() -> bool:
        for minute, memory_id in ids.items():
            out = [r["id"] for r in related(api, memory_id, relationship_types="PRECEDED_BY")
                   if r["direction"] == "outgoing"]
            if out != ([ids[minute - 1]] if minute else []):
                return False
        return True

    wait_until(chain_ok, timeout=30, message="exact PRECEDED_BY chain")


def test_preceded_by_breaks_timestamp_ties_by_arrival_order(api):
    """A chat import: a session's turns share one timestamp; the order they were sent is the chain.

    Ids are chosen so that their lexical order (turn-1, turn-10, turn-2, …) is not the sending
    order, and the turns come in two batches, the second sent after the first.
    """
    session = f"session:{uuid.uuid4().hex[:8]}"
    when = datetime(2024, 7, 1, 13, 56, tzinfo=timezone.utc).isoformat()
    ids = [f"{session}-turn-{n}" for n in range(1, 13)]
    bodies = [{"id": i, "content": f"turn {n} of the session", "tags": [session], "timestamp": when}
              for n, i in enumerate(ids, 1)]
    for chunk in (bodies[:7], bodies[7:]):
        response = api.post("/memory/batch", json={"memories": chunk})
        assert response.status_code == 201, response.text
    for memory_id in ids:
        enriched(api, memory_id)

    def previous(memory_id):
        return [r["id"] for r in related(api, memory_id, relationship_types="PRECEDED_BY") if r["direction"] == "outgoing"]

    wait_until(lambda: all(previous(ids[n]) == [ids[n - 1]] for n in range(1, len(ids))), timeout=30,
               message="chain in sending order")
    assert previous(ids[0]) == []
    # a later update keeps the memory's place: arrival is set once
    before = enriched(api, ids[0])["enriched_at"]
    assert api.patch(f"/memory/{ids[0]}", json={"content": "turn 1, edited"}).status_code in (200, 202)
    wait_until(lambda: api.get(f"/memory/{ids[0]}").json()["memory"].get("enriched_at") not in (None, before),
               message="edited turn re-enriched")
    assert previous(ids[1]) == [ids[0]] and previous(ids[0]) == []
    assert "arrival" not in api.get(f"/memory/{ids[0]}").json()["memory"]  # bookkeeping, not shown


def test_enrichment_that_keeps_failing_is_dead_lettered_and_counted(servers):
    stack = Stack.create(servers, actor_max_retries="1", spacy_model="no_such_spacy_model")
    stack.start_web()
    stack.start_worker()
    stack.start_enrich_worker()
    try:
        with stack.client() as api:
            memory_id = store(api, "Rachel moved to Denver", tags=[scope()])
            wait_until(lambda: memory_id in recall_ids(api, query="Rachel Denver"), message="recallable regardless")
            status = wait_until(
                lambda: (s := api.get("/enrichment/status").json())["stats"]["failed"] == 1
                and s["stats"]["dead_letters"] == 1 and s, timeout=60, message="failure counted, message dead-lettered")
            assert "no_such_spacy_model" in status["stats"]["last_error"]
            assert status["pending"] == 0 and status["inflight"] == 0
            assert api.get(f"/memory/{memory_id}").json()["memory"].get("enriched_at") is None
    finally:
        stack.stop()
