"""How a payload is laid out inside a Qdrant Edge shard.

The Edge binding converts a Python payload key by key and value by value, holding the GIL. A
Slack memory's payload has ~95 values (over 40 of them in its nested ``metadata``), so building
the points of an upsert would be the largest cost of the whole ingestion path, in the one
process that cannot be scaled out. So only the fields a filter or an index reads stay native
(the ``native`` keys, plus ``memory_id``, which every hit is named by); everything else
travels as one JSON string under ``DOC_KEY``: a few times fewer values to convert.

Reading unpacks it again: callers see exactly the payload they wrote. Points written before
this layout (all fields native) read back unchanged. A partial update touching a packed field
needs the stored document (``merge_partial``): the store reads, merges and writes it back.

Covered fields (``covered``, {field: covering field}): a native list field whose values are
partly another native field's values keeps only the rest natively. ``tag_prefixes`` holds
every tag's colon-prefixes *including the whole tag*, which ``tags_lower`` holds already: a
Slack memory's ~18 prefixes become the ~6 that are not tags themselves, and a filter asks
either field (``tag_prefixes`` OR ``tags_lower``: the same set as the whole list). The document
keeps the whole list, so reads see it as written. A partial update that touches either field
of a pair needs the stored payload (to trim against the other).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import orjson

DOC_KEY = "_doc"


def pack_payload(payload: dict[str, Any], native: Iterable[str], covered: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The native fields of ``payload`` as they are, the rest as one JSON string; a covered
    field natively without its covering field's values (whole in the document)."""
    native = frozenset(native)
    packed = {key: value for key, value in payload.items() if key in native}
    rest = {key: value for key, value in payload.items() if key not in native}
    for key, cover in (covered or {}).items():
        values, covering = packed.get(key), packed.get(cover)
        if isinstance(values, list) and isinstance(covering, list):
            have = set(covering)
            packed[key] = [value for value in values if value not in have]
            rest[key] = values
    if rest:
        packed[DOC_KEY] = orjson.dumps(rest).decode()
    return packed


class PackedPayload(dict):
    """A payload already in this layout (``pack_payload``'s output): the store writes it as it
    is. The persist stage packs on the worker side, so the web process, which owns the shard
    and is the bound of the write path, neither decodes the nested payload from the message
    nor packs it again."""


def unpack_payload(payload: dict[str, Any] | None) -> dict[str, Any]:
    if not payload:
        return {}
    doc = payload.get(DOC_KEY)
    unpacked = {key: value for key, value in payload.items() if key != DOC_KEY}
    if isinstance(doc, str):
        unpacked.update(orjson.loads(doc))  # the document wins over stale native fields
    return unpacked


def needs_document(partial: dict[str, Any], native: Iterable[str], covered: Mapping[str, str] | None = None) -> bool:
    """Does applying ``partial`` rewrite the packed document (so it must be read first)?"""
    native = frozenset(native)
    paired = {name for pair in (covered or {}).items() for name in pair}
    return any(key not in native or key in paired for key in partial)
