"""The launcher's tokens.json is never readable beyond its owner, not even for a moment."""

from __future__ import annotations

import json
import os
import stat

import pytest

import ops.tokens as tokens_module
from ops.tokens import load_or_create_tokens, write_private

pytestmark = pytest.mark.security  # pytest -m security: the security suite (docs/testing.md)


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask():
    previous = os.umask(0o022)  # the usual umask: a plain new file would be 0644
    yield
    os.umask(previous)


def test_created_private_from_the_start(tmp_path, open_umask, monkeypatch):
    modes = []
    real_replace = os.replace

    def replace_and_watch(src, dst):
        modes.append(_mode(tmp_path / os.path.basename(src)))  # the new file, before it takes the name
        real_replace(src, dst)

    monkeypatch.setattr(tokens_module.os, "replace", replace_and_watch)
    tokens = load_or_create_tokens(tmp_path, environ={})
    path = tmp_path / "tokens.json"
    assert modes == [0o600] and _mode(path) == 0o600
    assert json.loads(path.read_text()) == tokens and set(tokens) == {"AUTOMEM_API_TOKEN", "ADMIN_API_TOKEN"}
    assert [p.name for p in tmp_path.iterdir()] == ["tokens.json"]  # no scratch file left


def test_a_rewrite_replaces_a_readable_file_with_a_private_one(tmp_path, open_umask):
    path = tmp_path / "tokens.json"
    path.write_text("{}")
    path.chmod(0o644)
    write_private(path, '{"a": 1}')
    assert _mode(path) == 0o600 and path.read_text() == '{"a": 1}'


def test_an_existing_readable_file_is_narrowed_even_when_unchanged(tmp_path, open_umask):
    first = load_or_create_tokens(tmp_path, environ={})
    path = tmp_path / "tokens.json"
    path.chmod(0o644)
    assert load_or_create_tokens(tmp_path, environ={}) == first
    assert _mode(path) == 0o600


def test_the_environment_wins_and_is_kept(tmp_path):
    chosen = load_or_create_tokens(tmp_path, environ={"AUTOMEM_API_TOKEN": "mine"})
    assert chosen["AUTOMEM_API_TOKEN"] == "mine"
    assert load_or_create_tokens(tmp_path, environ={}) == chosen


def test_generated_tokens_are_hex_so_no_command_line_reads_one_as_an_option(tmp_path):
    # URL-safe base64 starts a token with "-" one time in 64: `--token -x…` is then an option
    tokens = []
    for n in range(20):
        (tmp_path / str(n)).mkdir()
        tokens.append(load_or_create_tokens(tmp_path / str(n), environ={}))
    for token in (value for pair in tokens for value in pair.values()):
        assert len(token) == 48 and set(token) <= set("0123456789abcdef"), token
