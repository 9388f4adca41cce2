"""Slack's retries are never dropped for an event that was not applied; exports cannot inflate without bound."""

from __future__ import annotations

import io
import json
import zipfile

import httpx
import pytest

from tests.integration.test_ingestion import SIGNING_SECRET, SlackClient, _event
from ops.bench.stack import ADMIN_TOKEN, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.security]


def test_a_crash_before_the_write_is_queued_leaves_the_event_to_slacks_retry(make_stack, tmp_path):
    switch = tmp_path / "crash"
    switch.touch()
    stack = make_stack(SLACK_SIGNING_SECRET=SIGNING_SECRET, MEMPIPE_TEST_SLACK_CRASH=str(switch))
    stack.start_web(app="tests.slack_crash:create_crashing_app")
    stack.start_worker()
    slack = SlackClient(stack)
    event = _event({"type": "message", "channel": "CCRASH", "user": "U1", "ts": "1700000000.000100", "text": "survive me"})
    with pytest.raises(httpx.HTTPError):
        slack.post(event)  # the web process dies mid-event
    stack.web.wait(30)

    switch.unlink()
    stack.start_web()  # back up, the real app
    retried = slack.post(event, retry=1)
    assert retried.status_code == 200 and retried.json()["status"] == "accepted", retried.text
    memory_id = "slack:TEVENTS:CCRASH:1700000000.000100"
    with stack.client() as api:
        wait_until(lambda: api.get(f"/memory/{memory_id}").status_code == 200, message="retried event stored")
        assert api.get(f"/memory/{memory_id}").json()["memory"]["content"] == "survive me"
    again = slack.post(event, retry=2)  # applied now: a further retry is the duplicate
    assert again.json()["status"] == "duplicate"


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def test_an_export_whose_files_inflate_past_the_bounds_is_refused_before_reading(make_stack):
    stack = make_stack(SLACK_EXPORT_MAX_MEMBER_BYTES="100000", SLACK_EXPORT_MAX_TOTAL_BYTES="1000000")
    stack.start_web()
    admin = {"X-Admin-Token": ADMIN_TOKEN, "Content-Type": "application/zip"}
    users = json.dumps([{"id": "U1", "name": "kara", "team_id": "T1"}]).encode()
    channels = json.dumps([{"id": "C1", "name": "general"}]).encode()
    day = json.dumps([{"type": "message", "user": "U1", "ts": "1700000000.000100", "text": "hello " + "x" * 200_000}]).encode()
    padding = b"\0" * 400_000
    with stack.client() as api:
        member = api.post("/admin/import/slack", content=_zip({"users.json": users, "channels.json": channels,
                                                                "general/2023-11-14.json": day}), headers=admin)
        assert member.status_code == 413, member.text
        assert "general/2023-11-14.json" in member.json()["message"] and "SLACK_EXPORT_MAX_MEMBER_BYTES" in member.json()["message"]
        # small files that add up: the bound on the whole, members the import would not even read included
        bomb = {"users.json": users, "channels.json": channels, **{f"general/canvas-{i}.bin": padding for i in range(3)}}
        total = api.post("/admin/import/slack", content=_zip(bomb), headers=admin)
        assert total.status_code == 413 and "SLACK_EXPORT_MAX_TOTAL_BYTES" in total.json()["message"], total.text
        fine = api.post("/admin/import/slack", params={"wait": "true"},
                        content=_zip({"users.json": users, "channels.json": channels,
                                      "general/2023-11-14.json": json.dumps([{"type": "message", "user": "U1",
                                                                             "ts": "1700000000.000100", "text": "hello"}]).encode()}),
                        headers=admin)
        assert fine.status_code == 200 and fine.json()["summary"]["messages"] == 1, fine.text
