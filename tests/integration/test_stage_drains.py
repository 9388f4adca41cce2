"""The embed and vector stages take the queued run of small messages in one call.

Single writes reach every stage a few per message. When such messages queue up behind the
one a stage is working on, its next call takes them all (``pipeline.drain``): one provider
call, one upsert, one bookkeeping round trip. Each drained message is still acknowledged
and still logs its own "message processed" line (its request id traced), and every write
ends up recallable exactly once.
"""

from __future__ import annotations

import json
import uuid

import pytest

from ops.bench.stack import Stack, wait_until

pytestmark = pytest.mark.integration

WRITES = 8


def _held(api, queue: str) -> int:
    return api.get("/health").json()["queues"][queue]


def _processed(stack: Stack, log_name: str, actor: str) -> list[dict]:
    lines = (stack.data_dir / f"{log_name}.log").read_text(errors="replace").splitlines()
    records = [json.loads(line) for line in lines if line.startswith("{")]
    return [r for r in records if r.get("message") == "message processed" and r.get("actor") == actor]


def _calls(processed: list[dict]) -> int:
    """Actor calls: the lines of messages that were not drained by another call."""
    return sum(1 for r in processed if "drained_by" not in r)


def _write_one_message_each(api, tag: str) -> list[str]:
    """One persist message per write: each request waits for its answer, past the coalescing window."""
    ids = []
    for i in range(WRITES):
        response = api.post("/memory", params={"wait": "false"}, json={"content": f"drain note {i} about {tag}", "tags": [tag]})
        assert response.status_code == 202, response.text
        ids.append(response.json()["memory_id"])
    return ids


def _all_recallable(api, tag: str, ids: list[str]) -> None:
    listed = api.get("/memory/by-tag", params={"tags": tag, "limit": 50}).json()
    assert sorted(m["id"] for m in listed["memories"]) == sorted(ids)
    hits = api.get("/recall", params={"query": f"drain note about {tag}", "tags": tag, "limit": 50}).json()["results"]
    assert sorted(h["id"] for h in hits) == sorted(ids)
    assert all(h["match_type"] == "vector" for h in hits)


def test_embed_stage_takes_the_queued_run_in_one_provider_call(make_stack):
    stack = make_stack()
    stack.start_web()
    tag = f"d-{uuid.uuid4().hex[:8]}"
    # persist without draining: every write becomes its own embed message
    stack.start_worker(queues=["persist"], PERSIST_DRAIN_MAX_ITEMS="0")
    with stack.client() as api:
        ids = _write_one_message_each(api, tag)
        wait_until(lambda: _held(api, "embed") == WRITES, message="one embed message per write")

        stack.start_worker(threads=1, queues=["embed"])
        wait_until(lambda: _held(api, "embed") == 0 and _held(api, "vectors") == 0, timeout=60, message="embedded and indexed")
        processed = _processed(stack, "worker", "embed_memories")
        assert len(processed) == WRITES, processed  # every message accounted for, drained or not
        # the embed consumer prefetches one message (pipeline.broker); its call drains the rest
        assert _calls(processed) == 1, processed
        assert all(r.get("request_id") for r in processed), processed  # each drained message keeps its trace
        _all_recallable(api, tag, ids)


def test_vector_stage_takes_the_queued_run_in_one_upsert(make_stack):
    # The web consumes only the similarity queue at first, so the vector messages wait for it.
    stack = make_stack(WEB_WORKER_QUEUES="similarity")
    stack.start_web()
    stack.start_worker(PERSIST_DRAIN_MAX_ITEMS="0", EMBED_DRAIN_MAX_ITEMS="0")
    tag = f"d-{uuid.uuid4().hex[:8]}"
    with stack.client() as api:
        ids = _write_one_message_each(api, tag)
        wait_until(lambda: _held(api, "vectors") == WRITES, message="one vector message per write")
    stack.web.terminate()
    stack.web.wait(30)
    del stack.extra_env["WEB_WORKER_QUEUES"]  # the default again: the web owns the vector queue
    stack.start_web()
    with stack.client() as api:
        wait_until(lambda: _held(api, "vectors") == 0, timeout=60, message="indexed")
        processed = _processed(stack, "web", "index_vectors")
        assert len(processed) == WRITES, processed
        # the web's vector consumer has one thread, so it prefetches 2; the first call drains the rest
        assert 1 <= _calls(processed) <= 2, processed
        _all_recallable(api, tag, ids)
