"""Validation of POST /associate bodies: one association, or a batch of up to 500.

A single body that is wrong is a 400 naming the field. In a batch, each item is judged on
its own, so one bad item costs only itself (the route answers 207 with per-item results);
only a malformed envelope (no list, too many items) fails the whole request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.errors import ValidationError
from pipeline.relations import AUTHORABLE_TYPES, lookup

MAX_BATCH = 500
DEFAULT_STRENGTH = 0.5
_ID_FIELDS = ("memory1_id", "memory2_id")


@dataclass(frozen=True)
class Association:
    memory1_id: str
    memory2_id: str
    type: str
    strength: float

    def to_message(self) -> dict[str, Any]:
        return {"memory1_id": self.memory1_id, "memory2_id": self.memory2_id, "type": self.type, "strength": self.strength}


@dataclass(frozen=True)
class ItemError:
    index: int
    item: Any
    message: str

    def view(self) -> dict[str, Any]:
        view: dict[str, Any] = {"index": self.index, "error": self.message}
        if isinstance(self.item, dict):
            for name in (*_ID_FIELDS, "type"):
                if isinstance(self.item.get(name), str):
                    view[name] = self.item[name]
        return view


def parse_association(item: Any, where: str = "") -> Association:
    if not isinstance(item, dict):
        raise ValidationError(f"{where or 'body'}: expected a JSON object")
    ids = []
    for name in _ID_FIELDS:
        value = item.get(name)
        if not isinstance(value, str) or not value.strip():
            raise ValidationError(f"{where}{name}: required, a memory id")
        ids.append(value.strip())
    if ids[0] == ids[1]:
        raise ValidationError(f"{where}memory2_id: a memory cannot be associated with itself")
    raw_type = item.get("type", "RELATES_TO")
    relation = lookup(raw_type) if isinstance(raw_type, str) else None
    if relation is None or not relation.authorable:
        shown = raw_type if isinstance(raw_type, str) else type(raw_type).__name__
        reason = "is system-generated and cannot be created" if relation else "is not a relation type"
        raise ValidationError(f"{where}type: {shown!r} {reason}; use one of {', '.join(AUTHORABLE_TYPES)}")
    strength = item.get("strength", DEFAULT_STRENGTH)
    if isinstance(strength, bool) or not isinstance(strength, (int, float)) or not 0.0 <= strength <= 1.0:
        raise ValidationError(f"{where}strength: expected a number from 0 to 1")
    return Association(ids[0], ids[1], relation.name, float(strength))


def parse_batch(body: dict[str, Any]) -> list[Association | ItemError]:
    items = body.get("associations")
    if not isinstance(items, list):
        raise ValidationError("associations: expected a list of associations")
    if not items:
        raise ValidationError("associations: must not be empty")
    if len(items) > MAX_BATCH:
        raise ValidationError(f"associations: {len(items)} items exceeds the limit of {MAX_BATCH}")
    parsed: list[Association | ItemError] = []
    for index, item in enumerate(items):
        try:
            parsed.append(parse_association(item, f"associations.{index}."))
        except ValidationError as exc:
            parsed.append(ItemError(index, item, exc.message))
    return parsed


def is_batch(body: Any) -> bool:
    if not isinstance(body, dict):
        raise ValidationError("body: expected a JSON object")
    return "associations" in body
