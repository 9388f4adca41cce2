"""Reading a standard Slack export, a ``.zip`` or its unpacked folder, one day file at a time.

Layout: ``users.json``, ``channels.json`` (and ``groups.json``/``mpims.json``/``dms.json``
for private exports), one folder per conversation holding ``YYYY-MM-DD.json`` arrays. Only
the small directory files and one day file are in memory at any moment, so an export of
any size imports in flat memory. Folders that no directory file lists are read too (real
exports have them); other files in a folder (canvases, ...) are not messages and are counted.

A zip member is read whole, so what it may inflate to is bounded before anything is read:
each file the import reads (directory and day files) by ``max_member_bytes``, and all the
zip's members together by ``max_total_bytes`` (a small upload can declare terabytes). Both
are checked on the sizes the zip declares when it is opened, and reads stop at the bound
whatever the zip declared.
"""

from __future__ import annotations

import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Iterator

import orjson

from pipeline.slack.render import Directory, display_name

DAY_FILE = re.compile(r"^\d{4}-\d{2}-\d{2}\.json$")
DIRECTORY_FILES = ("channels.json", "groups.json", "mpims.json", "dms.json")


@dataclass(frozen=True)
class Conversation:
    folder: str
    name: str
    id: str | None  # None for a folder no directory file lists


@dataclass(frozen=True)
class ExportMessage:
    conversation: Conversation
    day_file: str
    message: dict[str, Any]


# Defaults for callers without settings; the service passes SLACK_EXPORT_MAX_*_BYTES.
DEFAULT_MAX_MEMBER_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_TOTAL_BYTES = 8 * 1024 * 1024 * 1024


class ExportTooLarge(ValueError):
    """An export whose files would inflate past the bounds; the message names the file or the total."""


class SlackExport:
    """A zip or a folder, seen as relative POSIX paths under the export's root."""

    def __init__(self, path: str | os.PathLike, max_member_bytes: int = DEFAULT_MAX_MEMBER_BYTES,
                 max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES):
        self.path = Path(path)
        self.max_member_bytes, self.max_total_bytes = max_member_bytes, max_total_bytes
        self._zip = zipfile.ZipFile(self.path) if self.path.is_file() else None
        if self._zip is None and not self.path.is_dir():
            raise FileNotFoundError(f"{self.path}: no such export (a .zip or a folder)")
        try:
            self._root = self._find_root()
            self._folders: dict[str, list[str]] | None = None
            self._check_sizes()
        except BaseException:
            self.close()
            raise

    def _check_sizes(self) -> None:
        if self._zip is None:
            return  # a folder on the operator's own disk: reads are still bounded per file
        members = [m for m in self._zip.infolist() if not m.is_dir()]
        total = sum(m.file_size for m in members)
        if total > self.max_total_bytes:
            raise ExportTooLarge(f"the export inflates to {total} bytes, above SLACK_EXPORT_MAX_TOTAL_BYTES={self.max_total_bytes}")
        read = {self._full(name) for name in DIRECTORY_FILES + ("users.json",)}
        read |= {self._full(f"{folder}/{name}") for folder, names in self.folders().items() for name in names if DAY_FILE.match(name)}
        for member in members:
            if member.filename in read and member.file_size > self.max_member_bytes:
                raise ExportTooLarge(f"{member.filename} inflates to {member.file_size} bytes, above "
                                     f"SLACK_EXPORT_MAX_MEMBER_BYTES={self.max_member_bytes}")

    def _read_bounded(self, handle, name: str) -> bytes:
        data = handle.read(self.max_member_bytes + 1)
        if len(data) > self.max_member_bytes:  # more than the zip declared, or a file on disk
            raise ExportTooLarge(f"{name} is larger than SLACK_EXPORT_MAX_MEMBER_BYTES={self.max_member_bytes}")
        return data

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()

    def __enter__(self) -> "SlackExport":
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()

    # --- raw access --------------------------------------------------------------------
    def _all_files(self) -> list[str]:
        if self._zip is not None:
            return [n for n in self._zip.namelist() if not n.endswith("/") and not n.startswith("__MACOSX/")]
        return [p.relative_to(self.path).as_posix() for p in self.path.rglob("*") if p.is_file()]

    def _find_root(self) -> str:
        """Zips often wrap everything in one top folder: the root is where users.json sits."""
        names = self._all_files() if self._zip is not None else []
        if self._zip is None:
            return ""
        marks = sorted((n for n in names if PurePosixPath(n).name in ("users.json", "channels.json")), key=len)
        return str(PurePosixPath(marks[0]).parent) if marks and str(PurePosixPath(marks[0]).parent) != "." else ""

    def _full(self, rel: str) -> str:
        return f"{self._root}/{rel}" if self._root else rel

    def read_json(self, rel: str) -> Any | None:
        full = self._full(rel)
        try:
            if self._zip is not None:
                with self._zip.open(full) as handle:
                    return orjson.loads(self._read_bounded(handle, full))
            with open(self.path / full, "rb") as handle:
                return orjson.loads(self._read_bounded(handle, full))
        except (KeyError, FileNotFoundError):
            return None

    def folders(self) -> dict[str, list[str]]:
        """Conversation folder → its files (names only), sorted. Listed once."""
        if self._folders is None:
            self._folders = self._list_folders()
        return self._folders

    def _list_folders(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        prefix = f"{self._root}/" if self._root else ""
        for name in self._all_files():
            if not name.startswith(prefix):
                continue
            parts = name[len(prefix):].split("/")
            if len(parts) == 2:
                found.setdefault(parts[0], []).append(parts[1])
        return {folder: sorted(files) for folder, files in sorted(found.items())}

    # --- the export's meaning -----------------------------------------------------------
    def directory(self) -> tuple[Directory, list[Conversation], str | None]:
        """Names of users and channels, the conversations to read, and the workspace id."""
        users: dict[str, str] = {}
        team: str | None = None
        for user in self.read_json("users.json") or []:
            if isinstance(user, dict) and user.get("id"):
                name = display_name(user)
                if name:
                    users[user["id"]] = name
                team = team or user.get("team_id") or (user.get("profile") or {}).get("team")
        listed: dict[str, tuple[str, str]] = {}  # folder name (channel name, or id for dms) → (name, id)
        channels: dict[str, str] = {}
        for file_name in DIRECTORY_FILES:
            for entry in self.read_json(file_name) or []:
                if isinstance(entry, dict) and entry.get("id"):
                    name = entry.get("name") or entry["id"]
                    listed[name] = listed[entry["id"]] = (name, entry["id"])
                    channels[entry["id"]] = name
        conversations = []
        for folder in self.folders():
            name, channel_id = listed.get(folder, (folder, None))
            conversations.append(Conversation(folder=folder, name=name, id=channel_id))
        return Directory(users=users, channels=channels), conversations, team

    def messages(self, conversation: Conversation, counts: dict[str, int] | None = None) -> Iterator[ExportMessage]:
        """The conversation's messages, day file by day file. Non-day files are counted, not read."""
        for file_name in self.folders().get(conversation.folder, []):
            if not DAY_FILE.match(file_name):
                if counts is not None:
                    counts["non_message_files"] = counts.get("non_message_files", 0) + 1
                continue
            day = self.read_json(f"{conversation.folder}/{file_name}")
            for message in day if isinstance(day, list) else []:
                if isinstance(message, dict):
                    yield ExportMessage(conversation, file_name, message)
