import asyncio

import pytest

from api.coalescer import WriteCoalescer
from pipeline.batching import extract_items, is_unchanged, validate_batch
from pipeline.config import Settings
from pipeline.errors import ValidationError
from pipeline.records import Limits, build_new_record
from pipeline.slack.events import Delete, Ignore, Store, plan_event
from pipeline.slack.mapping import Channel, MappingRules, Skip, map_message, memory_id
from pipeline.slack.render import Directory, render_text

RULES = MappingRules(Settings().slack_noise_subtypes)
DIRECTORY = Directory(users={"U1": "kara", "U2": "Bob B"}, channels={"C9": "general"})
GENERAL = Channel("C9", "general")


@pytest.mark.parametrize(
    "raw, readable",
    [
        ("hi <@U1>", "hi @kara"),
        ("<@U3|old-style> there", "@old-style there"),
        ("<@U404>", "@U404"),
        ("see <#C9> and <#C8|random>", "see #general and #random"),
        ("<https://x.org|the site> <https://y.org>", "the site (https://x.org) https://y.org"),
        ("<!here> <!channel> <!subteam^S1|@core>", "@here @channel @core"),
        ("<mailto:a@b.c|a@b.c> &lt;code&gt; &amp;", "a@b.c <code> &"),
    ],
)
def test_render_text(raw, readable):
    assert render_text(raw, DIRECTORY) == readable


def test_message_maps_to_a_memory_with_tags_entities_and_source_keys():
    message = {
        "type": "message", "user": "U1", "ts": "1700000100.000200", "thread_ts": "1700000000.000100",
        "text": "ask <@U2>", "reactions": [{"name": "tada", "users": ["U2", "U3"], "count": 2}],
        "files": [{"name": "plot.png"}], "edited": {"user": "U1", "ts": "1700000200.000000"},
    }
    body = map_message(message, "T1", GENERAL, DIRECTORY, RULES)
    assert body["id"] == "slack:T1:C9:1700000100.000200" == memory_id("T1", GENERAL, "1700000100.000200")
    assert body["content"] == "ask @Bob B"
    assert body["timestamp"].startswith("2023-11-14T22:15:00.0002")
    assert body["tags"] == ["slack", "slack:channel:general", "slack:user:U1", "slack:thread:1700000000.000100",
                            "slack:reaction:tada", "entity:people:kara"]
    meta = body["metadata"]
    assert meta["part_of"] == "slack:T1:C9:1700000000.000100"
    assert meta["source_key"] == {"workspace": "T1", "channel": "C9", "ts": "1700000100.000200"}
    assert meta["slack"]["files"] == ["plot.png"] and meta["slack"]["reaction_count"] == 2
    assert meta["slack"]["edited_at"].startswith("2023-11-14T22:16:40")
    assert meta["entities"] == {"people": ["kara"]}
    record = build_new_record(body, Limits.from_settings(Settings(), vector_size=384))  # what the mapping makes, the write path accepts
    assert record.id == body["id"]


def test_root_is_not_part_of_itself_and_noise_bots_and_empties():
    root = map_message({"user": "U1", "ts": "1.000001", "thread_ts": "1.000001", "reply_count": 3, "text": "q"},
                       "T1", GENERAL, DIRECTORY, RULES)
    assert isinstance(root, Skip)  # "1.000001" is not a real ts
    root = map_message({"user": "U1", "ts": "1700000000.000100", "thread_ts": "1700000000.000100", "reply_count": 3,
                        "text": "q"}, "T1", GENERAL, DIRECTORY, RULES)
    assert "part_of" not in root["metadata"] and root["importance"] == 0.6
    assert map_message({"subtype": "channel_join", "ts": "1700000000.1", "text": "x"}, "T1", GENERAL, DIRECTORY,
                       RULES) == Skip("subtype:channel_join")
    assert map_message({"user": "U1", "ts": "1700000000.1", "text": ""}, "T1", GENERAL, DIRECTORY, RULES) == Skip("empty")
    bot = map_message({"subtype": "bot_message", "bot_id": "B1", "username": "ci", "ts": "1700000000.1", "text": "",
                       "attachments": [{"fallback": "build passed"}]}, "T1", GENERAL, DIRECTORY, RULES)
    assert bot["content"] == "build passed" and "slack:bot" in bot["tags"] and bot["metadata"]["slack"]["bot"]
    unlisted = Channel(None, "bug bbq!")
    assert memory_id("T1", unlisted, "1700000000.1") == "slack:T1:bug-bbq:1700000000.1"


def test_events_plan():
    base = {"type": "event_callback", "team_id": "T1"}
    new = plan_event({**base, "event": {"type": "message", "channel": "C9", "user": "U1", "ts": "1700000000.1",
                                        "text": "hello"}}, RULES, DIRECTORY)
    assert isinstance(new, Store) and new.kind == "new" and new.body["id"] == "slack:T1:C9:1700000000.1"
    changed = plan_event({**base, "event": {"type": "message", "subtype": "message_changed", "channel": "C9",
                                            "message": {"user": "U1", "ts": "1700000000.1", "text": "hello!"}}},
                         RULES, DIRECTORY)
    assert isinstance(changed, Store) and changed.kind == "changed" and changed.body["content"] == "hello!"
    deleted = plan_event({**base, "event": {"type": "message", "subtype": "message_deleted", "channel": "C9",
                                            "deleted_ts": "1700000000.1"}}, RULES, DIRECTORY)
    assert deleted == Delete("slack:T1:C9:1700000000.1")
    assert isinstance(plan_event({**base, "event": {"type": "reaction_added"}}, RULES, DIRECTORY), Ignore)


def test_batch_validation_and_unchanged_detection():
    with pytest.raises(ValidationError, match="^memories"):
        extract_items({"memories": [{}] * 3}, 2)
    batch = validate_batch([{"content": "ok", "timestamp": "2024-01-01T00:00:00Z"}, {"content": 5}], Limits.from_settings(Settings(), vector_size=384))
    assert [i.result()["status"] for i in batch.items] == ["accepted", "error"]
    assert batch.items[1].result()["message"].startswith("memories.1.content")
    record = batch.items[0].record
    stored = {**record.to_message()}
    assert is_unchanged(record, stored)
    assert not is_unchanged(record, {**stored, "content": "other"})
    assert not is_unchanged(record, {**stored, "tags": ["x"]})


def test_coalescer_gathers_concurrent_writes_into_one_send():
    sent: list[list[dict]] = []

    async def main():
        coalescer = WriteCoalescer(sent.append, window_s=0.01, max_items=100)
        await asyncio.gather(*(coalescer.submit({"id": str(i)}) for i in range(10)))

    asyncio.run(main())
    assert len(sent) == 1 and [m["id"] for m in sent[0]] == [str(i) for i in range(10)]


def test_coalescer_propagates_a_failed_send_to_every_writer():
    def broken(_batch):
        raise ConnectionError("broker down")

    async def main():
        coalescer = WriteCoalescer(broken, window_s=0.005, max_items=100)
        return await asyncio.gather(*(coalescer.submit({"id": str(i)}) for i in range(3)), return_exceptions=True)

    results = asyncio.run(main())
    assert all(isinstance(r, ConnectionError) for r in results)
