"""Slack Events API payloads → what to do with the memory store.

Mapping only (no I/O): the endpoint verifies, deduplicates and enqueues. Message events use
the importer's mapping, so an event and an import of the same message are the same memory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pipeline.slack.mapping import Channel, MappingRules, Skip, map_message, memory_id
from pipeline.slack.render import Directory

_MENTION = re.compile(r"<@([A-Z0-9]+)")


@dataclass(frozen=True)
class Store:
    body: dict[str, Any]
    kind: str  # "new" or "changed"


@dataclass(frozen=True)
class Delete:
    memory_id: str


@dataclass(frozen=True)
class Ignore:
    reason: str


Action = Store | Delete | Ignore


def ids_to_resolve(event: dict[str, Any]) -> tuple[list[str], str | None]:
    """User ids (author, mentions) and the channel id whose names the rendering needs."""
    message = event.get("message") if isinstance(event.get("message"), dict) else event
    users = {u for u in (message.get("user"), event.get("user")) if isinstance(u, str)}
    users.update(_MENTION.findall(str(message.get("text") or "")))
    channel = event.get("channel")
    return sorted(users), channel if isinstance(channel, str) else None


def plan_event(payload: dict[str, Any], rules: MappingRules, directory: Directory) -> Action:
    event = payload.get("event")
    if not isinstance(event, dict):
        return Ignore("no event")
    if event.get("type") != "message":
        return Ignore(f"event:{event.get('type')}")
    team = payload.get("team_id") or event.get("team")
    channel_id = event.get("channel")
    if not isinstance(team, str) or not isinstance(channel_id, str):
        return Ignore("malformed")
    channel = Channel(channel_id, directory.channels.get(channel_id) or channel_id)
    subtype = event.get("subtype")
    if subtype == "message_deleted":
        deleted = event.get("deleted_ts") or (event.get("previous_message") or {}).get("ts")
        return Delete(memory_id(team, channel, deleted)) if isinstance(deleted, str) else Ignore("malformed")
    if subtype == "message_changed":
        message = event.get("message")
        if not isinstance(message, dict):
            return Ignore("malformed")
        if message.get("subtype") == "tombstone":  # a thread root deleted while replies remain
            return Delete(memory_id(team, channel, message.get("ts", "")))
        mapped = map_message(message, team, channel, directory, rules)
        return Ignore(mapped.reason) if isinstance(mapped, Skip) else Store(mapped, "changed")
    mapped = map_message(event, team, channel, directory, rules)
    return Ignore(mapped.reason) if isinstance(mapped, Skip) else Store(mapped, "new")
