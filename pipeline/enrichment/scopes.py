"""Scope tags and content fingerprints: which memories form a sequence, which are duplicates.

A *scope* is a tag that names a stream of memories — a conversation, a session, a Slack
channel or thread. Memories sharing a scope tag are chained by ``PRECEDED_BY`` in timestamp
order; memories with the same normalised content and the same set of scope tags are exact
duplicates (an unscoped memory's scope is the global one).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

_SEPARATORS = (":", "_", "-", "/")
_SPACE = re.compile(r"\s+")
# Trailing punctuation and surrounding quotes do not make a message different.
_END_PUNCTUATION = " \t\n.,;:!?\"'`"


def is_scope_tag(tag: str, prefixes: tuple[str, ...]) -> bool:
    lowered = tag.lower()
    for prefix in prefixes:
        if lowered == prefix:
            return True
        if lowered.startswith(prefix) and lowered[len(prefix)] in _SEPARATORS:
            return True
    return False


def scope_tags(tags: list[str], prefixes: tuple[str, ...]) -> list[str]:
    """The memory's scope tags, as stored (scope matching is on the exact tag)."""
    return [t for t in tags if is_scope_tag(t, prefixes)]


def normalise_content(content: str) -> str:
    text = unicodedata.normalize("NFKC", content).casefold()
    return _SPACE.sub(" ", text).strip(_END_PUNCTUATION)


def content_fingerprint(content: str, scopes: list[str]) -> str:
    """Equal for exact duplicates: same normalised content, same set of scope tags."""
    scope_key = "\x1f".join(sorted({s.lower() for s in scopes}))
    digest = hashlib.blake2b(digest_size=16)
    digest.update(scope_key.encode())
    digest.update(b"\x00")
    digest.update(normalise_content(content).encode())
    return digest.hexdigest()
