"""A Slack export cannot make the importer read more than its bounds allow."""

from __future__ import annotations

import json
import zipfile

import pytest

from pipeline.slack.export import ExportTooLarge, SlackExport

pytestmark = pytest.mark.security  # pytest -m security: the security suite (docs/testing.md)

USERS = json.dumps([{"id": "U1", "name": "kara"}]).encode()
DAY = json.dumps([{"type": "message", "user": "U1", "ts": "1.000100", "text": "x" * 5000}]).encode()


def _zip(path, files):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def test_a_day_file_past_the_member_bound_is_refused_at_open(tmp_path):
    archive = _zip(tmp_path / "e.zip", {"top/users.json": USERS, "top/general/2023-11-14.json": DAY})
    with pytest.raises(ExportTooLarge, match="top/general/2023-11-14.json inflates to"):
        SlackExport(archive, max_member_bytes=4000, max_total_bytes=10**9)
    with SlackExport(archive, max_member_bytes=6000, max_total_bytes=10**9) as export:
        assert export.read_json("general/2023-11-14.json")[0]["user"] == "U1"


def test_files_the_import_never_reads_count_only_towards_the_total(tmp_path):
    canvas = b"\0" * 50_000  # compresses to next to nothing
    archive = _zip(tmp_path / "e.zip", {"users.json": USERS, "general/canvas.bin": canvas})
    with SlackExport(archive, max_member_bytes=1000, max_total_bytes=10**6):
        pass  # a large canvas is not read, so the member bound does not apply to it
    with pytest.raises(ExportTooLarge, match="SLACK_EXPORT_MAX_TOTAL_BYTES"):
        SlackExport(archive, max_member_bytes=1000, max_total_bytes=40_000)


def test_an_unpacked_folder_is_bounded_per_file_as_it_is_read(tmp_path):
    (tmp_path / "general").mkdir()
    (tmp_path / "users.json").write_bytes(USERS)
    (tmp_path / "general" / "2023-11-14.json").write_bytes(DAY)
    export = SlackExport(tmp_path, max_member_bytes=4000)
    assert export.read_json("users.json")[0]["id"] == "U1"
    with pytest.raises(ExportTooLarge, match="larger than SLACK_EXPORT_MAX_MEMBER_BYTES"):
        export.read_json("general/2023-11-14.json")
