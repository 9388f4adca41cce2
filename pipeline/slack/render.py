"""Slack's message markup rendered as readable text.

Slack stores ``<@U123>``, ``<#C123|general>``, ``<https://x|label>``, ``<!here>`` and HTML
entities in ``text``; a memory should read the way a person saw the message.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

_ANGLE = re.compile(r"<([^<>\n]+)>")


@dataclass
class Directory:
    """Names Slack ids stand for: users (display name) and channels."""

    users: dict[str, str] = field(default_factory=dict)
    channels: dict[str, str] = field(default_factory=dict)

    def user_name(self, user_id: str | None, fallback: str | None = None) -> str | None:
        if not user_id:
            return fallback
        return self.users.get(user_id) or fallback or user_id


def display_name(user: dict) -> str | None:
    """What Slack shows for a user: display name, else real name, else the handle."""
    profile = user.get("profile") or {}
    for candidate in (profile.get("display_name"), profile.get("real_name"), user.get("real_name"), user.get("name")):
        if isinstance(candidate, str) and candidate.strip():
            return candidate.strip()
    return None


def _render_token(token: str, directory: Directory) -> str:
    target, _, label = token.partition("|")
    if target.startswith("@"):  # user mention: <@U123> or <@U123|name>
        return "@" + directory.user_name(target[1:], label or None)
    if target.startswith("#"):  # channel link: <#C123|general>
        return "#" + (label or directory.channels.get(target[1:]) or target[1:])
    if target.startswith("!"):  # <!here>, <!subteam^S1|@team>, <!date^...|fallback>
        name = target[1:].split("^", 1)[0]
        if label:
            return label if label.startswith("@") or name == "date" else "@" + label
        return "@" + name
    if target.startswith("mailto:"):
        return label or target[len("mailto:"):]
    if label and label != target:
        return f"{label} ({target})"
    return target


def render_text(text: str | None, directory: Directory) -> str:
    """Slack markup → plain readable text (mentions by name, links with their labels)."""
    if not text:
        return ""
    rendered = _ANGLE.sub(lambda m: _render_token(m.group(1), directory), text)
    return html.unescape(rendered).strip()
