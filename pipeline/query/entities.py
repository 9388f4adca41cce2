"""The ``entities`` diagnostic: which entities the query names, resolved against the results.

An entity is known by its ``entity:<kind>:<slug>`` tag or a ``metadata.entities`` value (the
same keys entity expansion follows). The query names it when every word of its name is a
word of the query ("Sarah's sister" names ``sarah``). Each entry says how the name resolved:
the entity tag, its kind, and which returned results carry it.
"""

from __future__ import annotations

import re
from typing import Any

from pipeline.query.expansion import ENTITIES_REPORTED, entity_keys

_WORD = re.compile(r"[a-z0-9]+")


def named_entities(texts: list[str | None], results: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Entities named by any of ``texts`` among ``results`` ((id, memory) pairs), first seen first."""
    words = {w for text in texts if text for w in _WORD.findall(text.lower())}
    if not words:
        return []
    found: dict[str, dict[str, Any]] = {}
    for memory_id, memory in results:
        for tag, name in entity_keys([memory]):
            name_words = _WORD.findall(name)
            if not name_words or not set(name_words) <= words:
                continue
            entry = found.get(tag)
            if entry is None:
                if len(found) >= ENTITIES_REPORTED:
                    continue
                entry = found[tag] = {"name": name, "type": tag.split(":", 2)[1], "tag": tag, "result_ids": []}
            if memory_id not in entry["result_ids"]:
                entry["result_ids"].append(memory_id)
    return list(found.values())
