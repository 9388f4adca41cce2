"""High-volume ingestion over the real stack: batches, backpressure, Slack import and events."""

from __future__ import annotations

import json
import time
import uuid
import zipfile
from pathlib import Path

import httpx
import pytest
from falkordb import FalkorDB
from slack_sdk.signature import SignatureVerifier

from ops.bench.stack import ADMIN_TOKEN, API_TOKEN, Stack, wait_until
from pipeline.stages import PERSIST_QUEUE
from pipeline.graph import GraphStore
from pipeline.threads import PART_OF
from tests.queues import held_message_ids, write_path_idle

pytestmark = pytest.mark.integration
SLACK_DEV = Path("/work/shared/data/slack-dev")
SIGNING_SECRET = "test-signing-secret"


def _health(api: httpx.Client) -> dict:
    return api.get("/health").json()


def _graph(stack: Stack) -> GraphStore:
    return GraphStore(FalkorDB(host="127.0.0.1", port=stack.graph_port), f"memories_{stack.name}")


def _settled(api: httpx.Client, expected: int) -> bool:
    health = _health(api)
    return health["memory_count"] == health["vector_count"] == expected and health["queues"]["persist"] == 0


# --- batch writes -------------------------------------------------------------------------


def test_batch_is_one_persist_message_and_lands_whole(make_stack):
    stack = make_stack()
    stack.start_web()  # no worker yet: what the batch queued stays visible in the queue
    tag = f"b-{uuid.uuid4().hex[:8]}"
    bodies = [{"content": f"batch memory number {i} about topic {i % 7}", "tags": [tag]} for i in range(500)]
    with stack.client() as api:
        response = api.post("/memory/batch", json={"memories": bodies})
        assert response.status_code == 201, response.text
        body = response.json()
        assert body["status"] == "success" and body["accepted_count"] == 500 and body["failed_count"] == 0
        ids = [r["memory_id"] for r in body["results"]]
        assert [r["index"] for r in body["results"]] == list(range(500)) and len(set(ids)) == 500
        assert _health(api)["queues"]["persist"] == 1  # one message for the whole batch, not 500
        assert api.get(f"/memory/{ids[123]}").status_code == 202  # durably queued, reported pending

        stack.start_worker()
        wait_until(lambda: _settled(api, 500), timeout=90, message="500 memories persisted and indexed")
        assert api.get(f"/memory/{ids[123]}").json()["memory"]["content"] == bodies[123]["content"]
        hits = api.get("/recall", params={"query": "batch memory number 42", "tags": tag}).json()["results"]
        assert hits[0]["id"] == ids[42]


def test_batch_partial_failure_is_207_with_per_item_errors(api):
    tag = f"p-{uuid.uuid4().hex[:8]}"
    memory_id = f"src:{uuid.uuid4().hex}"
    items = [
        {"id": memory_id, "content": "a good one", "tags": [tag]},
        {"content": "", "tags": [tag]},
        {"content": "bad importance", "importance": 3, "tags": [tag]},
        "not an object",
        {"content": "another good one", "tags": [tag]},
    ]
    response = api.post("/memory/batch", json={"memories": items})
    assert response.status_code == 207, response.text
    body = response.json()
    assert body["status"] == "partial_success" and body["accepted_count"] == 2 and body["failed_count"] == 3
    results = body["results"]
    assert results[0] == {"index": 0, "status": "accepted", "memory_id": memory_id}
    assert results[1]["status"] == "error" and results[1]["code"] == 400
    assert results[1]["message"].startswith("memories.1.content")
    assert results[2]["message"].startswith("memories.2.importance")
    assert results[3]["message"].startswith("memories.3.body")
    good = [results[0]["memory_id"], results[4]["memory_id"]]
    wait_until(lambda: all(api.get(f"/memory/{m}").status_code == 200 for m in good), message="good items stored")
    wait_until(lambda: api.get("/recall", params={"tags": tag}).json()["count"] == 2, message="only the good items")

    # The same items again: already stored unchanged, so nothing is queued twice.
    wait_until(lambda: api.get(f"/memory/{memory_id}").json().get("state") is None, message="first write finished")
    again = api.post("/memory/batch", json={"memories": [items[0]]}).json()
    assert again["unchanged_count"] == 1 and again["results"][0]["status"] == "unchanged"
    changed = api.post("/memory/batch", json={"memories": [{**items[0], "content": "a changed one"}]}).json()
    assert changed["accepted_count"] == 1
    wait_until(lambda: api.get(f"/memory/{memory_id}").json()["memory"]["content"] == "a changed one", message="edit landed")


@pytest.mark.parametrize(
    "body, field",
    [
        ({"items": []}, "memories"),
        ({"memories": "x"}, "memories"),
        ({"memories": []}, "memories"),
        ({"memories": [{"content": "x"}] * 501}, "memories"),
    ],
)
def test_batch_body_errors_are_400_and_store_nothing(api, stack, body, field):
    before = held_message_ids(stack, PERSIST_QUEUE)
    response = api.post("/memory/batch", json=body)
    assert response.status_code == 400
    envelope = response.json()
    assert envelope["status"] == "error" and envelope["code"] == 400 and envelope["message"].startswith(field)
    assert held_message_ids(stack, PERSIST_QUEUE) - before == set()  # this request queued nothing


def test_backpressure_answers_429_with_retry_after_then_recovers(make_stack):
    stack = make_stack(BACKPRESSURE_MAX_PENDING="50", BACKPRESSURE_RETRY_AFTER_S="3", SLACK_SIGNING_SECRET=SIGNING_SECRET)
    stack.start_web()  # no worker: the backlog can only grow
    slack = SlackClient(stack)
    event = _event({"type": "message", "channel": "CBACKLOG", "user": "U1", "ts": "1700000000.000100", "text": "from slack"})
    with stack.client() as api:
        first = api.post("/memory/batch", json={"memories": [{"content": f"backlog {i}"} for i in range(60)]})
        assert first.status_code == 201  # admitted: the backlog was 0 when it arrived
        for refused in (
            api.post("/memory/batch", json={"memories": [{"content": "one more"}]}),
            api.post("/memory", json={"content": "single write"}),
            slack.post(event),
        ):
            assert refused.status_code == 429
            assert refused.headers["retry-after"] == "3"
            assert refused.json()["status"] == "error" and refused.json()["code"] == 429
        assert _health(api)["queues"]["persist"] == 1  # the refused writes queued nothing

        stack.start_worker()
        wait_until(lambda: _settled(api, 60), timeout=60, message="backlog drained")
        assert api.post("/memory", json={"content": "accepted again"}).status_code == 201
        # Slack's retry of the refused event is not taken for a duplicate: it was never claimed.
        retried = slack.post(event, retry=1)
        assert retried.status_code == 200 and retried.json()["status"] == "accepted"


# --- Slack export import ----------------------------------------------------------------------


def _import(stack: Stack, export: Path) -> dict:
    result = stack.run_tool("-m", "ops.slack_import", str(export), "--url", stack.url, "--token", API_TOKEN,
                            "--no-progress", "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _export_messages(export: Path) -> int:
    return sum(len(json.loads(p.read_text())) for p in export.glob("*/????-??-??.json"))


@pytest.mark.parametrize("name", ["r-contributors", "houstondatavis"])
def test_slack_export_imports_reconciles_and_reimports_nothing(make_stack, name):
    export = SLACK_DEV / name
    stack = make_stack()
    stack.start_web()
    stack.start_worker(processes=1, threads=2)
    summary = _import(stack, export)
    assert summary["messages"] == _export_messages(export)
    assert summary["reconciles"] and summary["failed"] == 0 and summary["interrupted"] is False
    assert summary["messages"] == summary["imported"] + sum(summary["skipped"].values())
    assert summary["skipped"]["subtype:channel_join"] > 0
    with stack.client() as api:
        wait_until(lambda: _settled(api, summary["imported"]), timeout=120, message="import recallable")
        again = _import(stack, export)
        assert again["imported"] == 0 and again["duplicates"] == summary["imported"]
        assert again["skipped"] == summary["skipped"]
        # Whatever the second import queued has been through the write path: it added nothing.
        health = wait_until(lambda: write_path_idle(h := _health(api)) and h, timeout=60, message="write path idle")
        assert health["memory_count"] == summary["imported"]


def test_slack_threads_tags_rendering_and_recall(make_stack):
    export = SLACK_DEV / "r-contributors"
    stack = make_stack()
    stack.start_web()
    stack.start_worker(processes=1, threads=2)
    summary = _import(stack, export)
    with stack.client() as api:
        wait_until(lambda: _settled(api, summary["imported"]), timeout=120, message="import recallable")
        team = "T01DW9DLB2A"
        # A thread in #core-dev-help (channel id from channels.json): the root and its replies.
        day = json.loads((export / "core-dev-help").glob("*.json").__next__().read_text())
        roots = [m for m in day if m.get("reply_count")]
        if not roots:
            day = [m for p in sorted((export / "core-dev-help").glob("*.json")) for m in json.loads(p.read_text())]
            roots = [m for m in day if m.get("reply_count")]
        root = roots[0]
        root_id = f"slack:{team}:C01ESS92UMN:{root['ts']}"
        reply_ts = [r["ts"] for r in root["replies"]]
        graph = _graph(stack)
        linked = {other for direction, other in graph.related(root_id, PART_OF) if direction == "in"}
        assert {f"slack:{team}:C01ESS92UMN:{ts}" for ts in reply_ts} <= linked
        reply = api.get(f"/memory/slack:{team}:C01ESS92UMN:{reply_ts[0]}").json()["memory"]
        assert f"slack:thread:{root['ts']}" in reply["tags"] and "slack:channel:core-dev-help" in reply["tags"]
        assert reply["metadata"]["part_of"] == root_id
        assert graph.related(reply["id"], PART_OF) == [("out", root_id)]

        # Total PART_OF edges = thread replies imported (a reply in an unlisted folder links too).
        rows = graph._read(f"MATCH (:Memory)-[e:{PART_OF}]->(:Memory) RETURN count(e)")
        replies_imported = graph._read("MATCH (m:Memory) WHERE m.part_of IS NOT NULL RETURN count(m)")
        assert rows[0][0] == replies_imported[0][0] > 700

        # Rendering: no raw <@U…> markup survives, mentions read as names.
        raw = graph._read("MATCH (m:Memory) WHERE m.content CONTAINS '<@U' RETURN count(m)")
        assert raw[0][0] == 0
        # Recall a thread by channel tag and a question about it.
        question = " ".join(api.get(f"/memory/{root_id}").json()["memory"]["content"].split()[:12])
        hits = api.get("/recall", params={"query": question, "tags": "slack:channel:core-dev-help", "limit": 5}).json()
        assert root_id in [h["id"] for h in hits["results"]]
        assert all("slack:channel:core-dev-help" in h["memory"]["tags"] for h in hits["results"])
        # Reactions, bots and people entities.
        reacted = graph._read("MATCH (m:Memory) WHERE any(t IN m.tags WHERE t STARTS WITH 'slack:reaction:') RETURN count(m)")
        assert reacted[0][0] > 0
        bots = graph._read("MATCH (m:Memory) WHERE 'slack:bot' IN m.tags RETURN count(m)")
        assert bots[0][0] == 36
        edited = graph._read("MATCH (m:Memory) WHERE m.metadata_json CONTAINS '\"edited_at\"' RETURN count(m)")
        assert edited[0][0] > 0


def test_admin_upload_of_a_zip(make_stack, tmp_path):
    export = SLACK_DEV / "houstondatavis"
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in export.rglob("*"):
            if path.is_file():
                zf.write(path, f"houstondatavis export/{path.relative_to(export)}")  # wrapped in a top folder
    stack = make_stack()
    stack.start_web()
    stack.start_worker()
    with stack.client(timeout=120) as api:
        upload = {"Content-Type": "application/zip"}
        assert api.post("/admin/import/slack", content=archive.read_bytes(), headers=upload).status_code == 403  # admin only
        admin = {"X-Admin-Token": ADMIN_TOKEN, **upload}
        response = api.post("/admin/import/slack", params={"wait": "true"}, content=archive.read_bytes(), headers=admin)
        assert response.status_code == 200, response.text
        summary = response.json()["summary"]
        assert summary["messages"] == _export_messages(export) and summary["reconciles"] and summary["imported"] > 1000
        wait_until(lambda: _settled(api, summary["imported"]), timeout=300, message="uploaded import recallable")
        # the background form: a job id, then its status
        job = api.post("/admin/import/slack", content=archive.read_bytes(), headers=admin)
        assert job.status_code == 202
        status_url = job.json()["status_url"]
        done = wait_until(lambda: (s := api.get(status_url, headers=admin).json())["status"] == "done" and s, timeout=60)
        assert done["summary"]["duplicates"] == summary["imported"] and done["summary"]["imported"] == 0
        bad = api.post("/admin/import/slack", content=b"not a zip", headers=admin)
        assert bad.status_code == 400 and bad.json()["message"].startswith("body")


# --- Slack Events API -----------------------------------------------------------------------


class SlackClient:
    def __init__(self, stack: Stack, secret: str = SIGNING_SECRET):
        self.url = f"{stack.url}/ingest/slack/events"
        self.verifier = SignatureVerifier(secret)

    def post(self, payload: dict, *, ts: int | None = None, signature: str | None = None, retry: int | None = None):
        body = json.dumps(payload)
        timestamp = str(ts or int(time.time()))
        headers = {
            "Content-Type": "application/json",
            "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": signature or self.verifier.generate_signature(timestamp=timestamp, body=body),
        }
        if retry is not None:
            headers["X-Slack-Retry-Num"] = str(retry)
            headers["X-Slack-Retry-Reason"] = "http_timeout"
        return httpx.post(self.url, content=body, headers=headers, timeout=10)


def _event(event: dict, team: str = "TEVENTS") -> dict:
    return {"type": "event_callback", "team_id": team, "event_id": f"Ev{uuid.uuid4().hex[:10]}", "event": event}


def test_slack_events_new_changed_deleted_threaded_retried_and_refused(make_stack):
    stack = make_stack(SLACK_SIGNING_SECRET=SIGNING_SECRET)
    stack.start_web()
    stack.start_worker()
    slack = SlackClient(stack)
    channel = f"C{uuid.uuid4().hex[:8].upper()}"
    root_ts, reply_ts = "1700000000.000100", "1700000100.000200"
    root_id, reply_id = f"slack:TEVENTS:{channel}:{root_ts}", f"slack:TEVENTS:{channel}:{reply_ts}"
    with stack.client() as api:
        # url_verification
        challenge = slack.post({"type": "url_verification", "challenge": "abc123", "token": "x"})
        assert challenge.status_code == 200 and challenge.json() == {"challenge": "abc123"}

        # refused: bad signature, stale timestamp, no signature; nothing stored
        new = _event({"type": "message", "channel": channel, "user": "U1", "text": "refused write", "ts": "1700000000.000001"})
        assert slack.post(new, signature="v0=" + "0" * 64).status_code == 401
        assert slack.post(new, ts=int(time.time()) - 3600).status_code == 401
        assert SlackClient(stack, secret="another-secret").post(new).status_code == 401
        assert httpx.post(slack.url, json=new).status_code == 401
        assert held_message_ids(stack, PERSIST_QUEUE) == set()  # this stack's first write: none queued
        assert api.get("/memory/slack:TEVENTS:" + channel + ":1700000000.000001").status_code == 404

        # new message
        first = _event({"type": "message", "channel": channel, "user": "U1", "ts": root_ts, "team": "TEVENTS",
                        "text": "Should we move the nightly <https://ci.example.org|CI build> to 2am? cc <@U2>"})
        response = slack.post(first)
        assert response.status_code == 200 and response.json() == {"status": "accepted", "action": "store", "memory_id": root_id}
        memory = wait_until(lambda: (r := api.get(f"/memory/{root_id}")).status_code == 200 and r.json()["memory"], message="root stored")
        assert memory["content"] == "Should we move the nightly CI build (https://ci.example.org) to 2am? cc @U2"
        assert "slack:channel:" + channel in memory["tags"] and "slack:user:U1" in memory["tags"]

        # retried delivery of the same event: acknowledged, not applied again
        retried = slack.post(first, retry=1)
        assert retried.status_code == 200 and retried.json()["status"] == "duplicate"

        # threaded reply
        reply = _event({"type": "message", "channel": channel, "user": "U2", "ts": reply_ts, "thread_ts": root_ts,
                        "parent_user_id": "U1", "text": "Yes, 2am works for the nightly build"})
        assert slack.post(reply).json()["memory_id"] == reply_id
        wait_until(lambda: api.get(f"/memory/{reply_id}").status_code == 200, message="reply stored")
        assert wait_until(lambda: _graph(stack).related(reply_id, PART_OF)) == [("out", root_id)]

        # edited: the memory follows, and is re-embedded (recall by the new words)
        changed = _event({"type": "message", "subtype": "message_changed", "channel": channel, "hidden": True,
                          "ts": "1700000200.000300",
                          "message": {"type": "message", "user": "U1", "ts": root_ts,
                                      "text": "Should we move the nightly CI build to 3am instead of midnight",
                                      "edited": {"user": "U1", "ts": "1700000200.000000"}},
                          "previous_message": {"type": "message", "user": "U1", "ts": root_ts, "text": "old"}})
        assert slack.post(changed).json()["action"] == "update"
        edited = wait_until(lambda: (m := api.get(f"/memory/{root_id}").json()["memory"])["content"].endswith("midnight") and m,
                            message="edit applied")
        assert edited["metadata"]["slack"]["edited_at"].startswith("2023-11-14T22:16:40")
        wait_until(lambda: api.get(f"/memory/{root_id}").json().get("state") is None, message="edit indexed")
        hits = api.get("/recall", params={"query": "3am instead of midnight", "tags": f"slack:channel:{channel}"}).json()
        assert hits["results"][0]["id"] == root_id and "midnight" in hits["results"][0]["memory"]["content"]

        # noise subtype: acknowledged, not stored
        join = _event({"type": "message", "subtype": "channel_join", "channel": channel, "user": "U3",
                       "ts": "1700000300.000400", "text": "<@U3> has joined the channel"})
        assert slack.post(join).json() == {"status": "ignored", "reason": "subtype:channel_join"}

        # deleted
        deleted = _event({"type": "message", "subtype": "message_deleted", "channel": channel, "hidden": True,
                          "ts": "1700000400.000500", "deleted_ts": reply_ts})
        assert slack.post(deleted).json() == {"status": "accepted", "action": "delete", "memory_id": reply_id}
        wait_until(lambda: api.get(f"/memory/{reply_id}").status_code == 404, message="reply deleted")
        assert _graph(stack).related(root_id, PART_OF) == []
        recalled = api.get("/recall", params={"tags": f"slack:channel:{channel}"}).json()
        assert [r["id"] for r in recalled["results"]] == [root_id]


def test_queued_single_writes_are_persisted_as_few_batches(make_stack):
    stack = make_stack()
    stack.start_web()  # no worker yet: each write stays its own persist message
    with stack.client() as api:
        ids = [api.post("/memory", params={"wait": "false"}, json={"content": f"queued single {i}"}).json()["memory_id"]
               for i in range(40)]
        assert _health(api)["queues"]["persist"] == 40
        stack.start_worker(queues=["persist"])  # persist only: what it sends on stays countable
        wait_until(lambda: _health(api)["queues"]["persist"] == 0 and _health(api)["memory_count"] == 40,
                   timeout=60, message="all persisted")
        # One persist call took many messages, so far fewer embed messages than writes.
        assert _health(api)["queues"]["embed"] <= 10
        stack.start_worker(queues=["embed"])
        wait_until(lambda: _settled(api, 40), timeout=60, message="all recallable")
        assert all(api.get(f"/memory/{m}").status_code == 200 for m in ids[::7])
        assert _health(api)["dead_letter_count"] == 0
