"""How a payload is laid out inside a Qdrant Edge shard.

Measured here: the Edge binding converts a Python payload value by value, at ~5-10 µs per
value, holding the GIL. A Slack memory's payload has ~95 values (over 40 of them in its
nested ``metadata``), so building the points of one 500-memory upsert cost ~0.5-0.8 s of the
web process's only core: the largest single cost of the whole ingestion path. Nested values
that no filter reads (``metadata``, ``tags``, ...) are therefore stored as one JSON string
each, under ``<key>__json``; the indexed fields recall filters on stay native.

The layout is per key, so a partial ``set_payload`` (enrichment, decay) still merges key by
key, and reading unpacks it again: callers see exactly the payload they wrote. Points
written before this layout (native nested values) read back unchanged.
"""

from __future__ import annotations

from typing import Any, Iterable

import orjson

PACKED_SUFFIX = "__json"


def pack_payload(payload: dict[str, Any], native: Iterable[str]) -> dict[str, Any]:
    """``payload`` with every dict/list value outside ``native`` as a JSON string."""
    native = frozenset(native)
    packed: dict[str, Any] = {}
    for key, value in payload.items():
        if isinstance(value, (dict, list)) and key not in native:
            packed[key + PACKED_SUFFIX] = orjson.dumps(value).decode()
        else:
            packed[key] = value
    return packed


def unpack_payload(payload: dict[str, Any] | None) -> dict[str, Any]:
    if not payload:
        return {}
    unpacked: dict[str, Any] = {}
    for key, value in payload.items():
        if key.endswith(PACKED_SUFFIX) and isinstance(value, str):
            unpacked[key[: -len(PACKED_SUFFIX)]] = orjson.loads(value)
        elif key + PACKED_SUFFIX not in payload:  # a packed value wins over a stale native one
            unpacked[key] = value
    return unpacked
