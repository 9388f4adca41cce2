"""One Slack message → one AutoMem memory body (or the reason it is skipped).

Shared by the export importer and the Events API endpoint, so a message stores the same
memory whichever way it arrives. The memory id is derived from the source key
``(workspace, channel, ts)``: importing the same export twice, receiving an event that an
import already brought in, or a retried event all land on the same memory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from pipeline.slack.render import Directory, render_text

MAX_REACTION_TAGS = 24  # keeps a much-reacted message inside the per-memory tag limit
BASE_IMPORTANCE = 0.5
_UNSAFE = re.compile(r"[^A-Za-z0-9._\-]+")
_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class Skip:
    """Not stored, and why (the import summary counts these by reason)."""

    reason: str


@dataclass(frozen=True)
class Channel:
    id: str | None
    name: str

    @property
    def key(self) -> str:
        """The channel part of a memory id: its Slack id, else (unlisted folder) its name."""
        return self.id or _UNSAFE.sub("-", self.name).strip("-")[:60] or "unknown"


@dataclass(frozen=True)
class MappingRules:
    noise_subtypes: frozenset[str]
    content_max_chars: int = 8000


def memory_id(workspace: str, channel: Channel, ts: str) -> str:
    return f"slack:{_UNSAFE.sub('-', workspace)[:40]}:{channel.key}:{ts}"


def _iso(ts: str | float) -> str:
    return datetime.fromtimestamp(float(ts), tz=timezone.utc).isoformat()


def _slug(name: str) -> str:
    return _SLUG.sub("-", name.lower()).strip("-")


def _valid_ts(value: Any) -> str | None:
    if isinstance(value, str) and re.fullmatch(r"\d{9,11}(\.\d{1,6})?", value):
        return value
    return None


def _files(message: dict[str, Any]) -> list[str]:
    files = list(message.get("files") or [])
    if isinstance(message.get("file"), dict):  # older exports: one file per message
        files.append(message["file"])
    names = []
    for f in files:
        if isinstance(f, dict):
            name = f.get("name") or f.get("title")
            if name:
                names.append(str(name))
    return names


def _attachment_text(message: dict[str, Any], directory: Directory) -> str:
    parts = []
    for attachment in message.get("attachments") or []:
        if isinstance(attachment, dict):
            text = attachment.get("text") or attachment.get("fallback") or attachment.get("title")
            if text:
                parts.append(render_text(str(text), directory))
    return "\n".join(p for p in parts if p)


def map_message(
    message: dict[str, Any], workspace: str, channel: Channel, directory: Directory, rules: MappingRules
) -> dict[str, Any] | Skip:
    """The memory body ``POST /memory`` (or one item of a batch) takes, or why not."""
    ts = _valid_ts(message.get("ts"))
    if ts is None:
        return Skip("malformed")
    subtype = message.get("subtype")
    if subtype in rules.noise_subtypes:
        return Skip(f"subtype:{subtype}")
    is_bot = subtype == "bot_message" or bool(message.get("bot_id"))
    files = _files(message)
    text = _content(message, directory, files, is_bot)
    if not text:
        return Skip("empty")
    truncated = len(text) > rules.content_max_chars
    if truncated:
        text = text[: rules.content_max_chars - 1] + "…"

    author = Author.of(message, directory, is_bot)
    thread_ts = _valid_ts(message.get("thread_ts"))
    reactions = _reactions(message)
    slack = _slack_fields(message, workspace, channel, ts, thread_ts, author, reactions, files)
    if truncated:
        slack["truncated"] = True
    metadata: dict[str, Any] = {
        "source": "slack",
        "source_key": {"workspace": workspace, "channel": channel.key, "ts": ts},
        "slack": slack,
    }
    if author.people:
        metadata["entities"] = {"people": author.people}
    if thread_ts and thread_ts != ts:
        metadata["part_of"] = memory_id(workspace, channel, thread_ts)  # → a PART_OF edge to the root

    importance = BASE_IMPORTANCE
    if slack["reply_count"]:
        importance += 0.1  # a message that started a discussion
    if reactions:
        importance += 0.1
    return {
        "id": memory_id(workspace, channel, ts),
        "content": text,
        "tags": _tags(channel, thread_ts, author, reactions),
        "importance": round(importance, 2),
        "timestamp": _iso(ts),
        "metadata": metadata,
    }


@dataclass(frozen=True)
class Author:
    """Who wrote a message: its user (or bot) id, the name shown, and whether a bot."""

    user_id: str | None
    name: str | None
    is_bot: bool

    @classmethod
    def of(cls, message: dict[str, Any], directory: Directory, is_bot: bool) -> "Author":
        user_id = message.get("user") or message.get("bot_id")
        name = (
            directory.users.get(message.get("user") or "")
            or message.get("username")
            or (message.get("bot_profile") or {}).get("name")
            or (message.get("user_profile") or {}).get("display_name")
            or (message.get("user_profile") or {}).get("real_name")
            or user_id
        )
        return cls(user_id, name, is_bot)

    @property
    def people(self) -> list[str]:
        """The people a message names by its author: none for a bot."""
        return [self.name] if self.name and not self.is_bot else []


def _content(message: dict[str, Any], directory: Directory, files: list[str], is_bot: bool) -> str:
    """The message's text as stored; empty when it has nothing to say."""
    text = render_text(message.get("text"), directory)
    if not text and is_bot:
        text = _attachment_text(message, directory)  # bots often put their text in attachments
    if not text and files:
        text = "shared " + ", ".join(files)
    return text


def _reactions(message: dict[str, Any]) -> dict[str, int]:
    """Reaction name → how many reacted (at least one)."""
    return {
        r["name"]: int(r.get("count") or len(r.get("users") or []) or 1)
        for r in message.get("reactions") or []
        if isinstance(r, dict) and isinstance(r.get("name"), str)
    }


def _tags(channel: Channel, thread_ts: str | None, author: Author, reactions: dict[str, int]) -> list[str]:
    tags = ["slack", f"slack:channel:{channel.name}"]
    if author.user_id:
        tags.append(f"slack:user:{author.user_id}")
    if thread_ts:
        tags.append(f"slack:thread:{thread_ts}")
    if author.is_bot:
        tags.append("slack:bot")
    tags += [f"slack:reaction:{name}" for name in list(reactions)[:MAX_REACTION_TAGS]]
    tags += [f"entity:people:{slug}" for slug in map(_slug, author.people) if slug]
    return tags


def _slack_fields(message: dict[str, Any], workspace: str, channel: Channel, ts: str, thread_ts: str | None,
                  author: Author, reactions: dict[str, int], files: list[str]) -> dict[str, Any]:
    """``metadata.slack``: where the message is, who wrote it, and what it drew."""
    slack: dict[str, Any] = {
        "workspace": workspace,
        "channel_id": channel.id,
        "channel": channel.name,
        "ts": ts,
        "user_id": author.user_id,
        "user_name": author.name,
        # permalink parts: https://<workspace domain>/archives/<channel_id>/p<ts digits>[?thread_ts=…]
        "permalink": {"channel_id": channel.id, "message": "p" + ts.replace(".", ""), "thread_ts": thread_ts},
        "reply_count": int(message.get("reply_count") or 0),
        "reaction_count": sum(reactions.values()),
        "reactions": reactions,
        "files": files,
    }
    if message.get("subtype"):
        slack["subtype"] = message["subtype"]
    if thread_ts:
        slack["thread_ts"] = thread_ts
    if author.is_bot:
        slack["bot"] = True
        slack["bot_id"] = message.get("bot_id")
    edited = message.get("edited") if isinstance(message.get("edited"), dict) else None
    if edited and _valid_ts(edited.get("ts")):
        slack["edited_at"] = _iso(edited["ts"])
    return slack
