"""Batches of memories: per-item validation, and spotting items already stored unchanged.

A batch is validated item by item, so one bad memory costs only its own slot (207), never
the whole request. Items whose id is already in the graph with the same content and fields
are reported ``unchanged`` and not queued again: re-importing a source is cheap and adds
nothing, while an edited item (different content, tags, metadata, ...) is queued as usual.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pipeline.errors import MempipeError, ValidationError
from pipeline.records import Limits, MemoryRecord, arrival_of, build_new_record, now_utc

ACCEPTED, UNCHANGED, ERROR = "accepted", "unchanged", "error"


@dataclass
class BatchItem:
    index: int
    record: MemoryRecord | None = None
    error: MempipeError | None = None
    status: str = ACCEPTED
    timestamp_given: bool = True  # an omitted timestamp means "now": not a change to compare

    def result(self) -> dict[str, Any]:
        if self.error is not None:
            return {"index": self.index, "status": ERROR, "code": self.error.status_code, "message": self.error.message}
        return {"index": self.index, "status": self.status, "memory_id": self.record.id}


@dataclass
class ValidatedBatch:
    items: list[BatchItem] = field(default_factory=list)

    @property
    def valid(self) -> list[BatchItem]:
        return [item for item in self.items if item.record is not None]

    def to_queue(self) -> list[MemoryRecord]:
        return [item.record for item in self.items if item.record is not None and item.status == ACCEPTED]

    def count(self, status: str) -> int:
        return sum(1 for item in self.items if (item.status if item.error is None else ERROR) == status)


def extract_items(body: Any, max_items: int) -> list[Any]:
    """The list of memory bodies: ``{"memories": [...]}`` (or a bare list)."""
    items = body.get("memories") if isinstance(body, dict) else body
    if isinstance(body, dict) and "memories" not in body:
        raise ValidationError("memories: field required (a list of memory objects)")
    if not isinstance(items, list):
        raise ValidationError("memories: expected a list of memory objects")
    if not items:
        raise ValidationError("memories: must hold at least one memory")
    if len(items) > max_items:
        raise ValidationError(f"memories: {len(items)} items exceeds the limit of {max_items}")
    return items


def validate_batch(items: list[Any], limits: Limits, *, now: datetime | None = None) -> ValidatedBatch:
    now = now or now_utc()
    batch = ValidatedBatch()
    for index, body in enumerate(items):
        try:
            record = build_new_record(body, limits, now=now)
            record.arrival = arrival_of(now, index)  # one clock reading for the batch: its order breaks ties
            given = isinstance(body, dict) and body.get("timestamp") is not None
            batch.items.append(BatchItem(index, record=record, timestamp_given=given))
        except ValidationError as exc:
            exc.message = f"memories.{index}.{exc.message}"
            batch.items.append(BatchItem(index, error=exc))
    return batch


_COMPARED = ("content", "tags", "importance", "timestamp", "metadata", "t_valid", "t_invalid")


def is_unchanged(record: MemoryRecord, stored: dict[str, Any], *, timestamp_given: bool = True) -> bool:
    """Would writing ``record`` change nothing a client can see in ``stored``?"""
    if record.embedding is not None:
        return False  # a client-supplied vector cannot be compared cheaply: write it
    if record.type is not None and (stored.get("type"), stored.get("confidence")) != (record.type, record.confidence):
        return False
    if record.type is None and record.confidence is not None and stored.get("confidence") != record.confidence:
        return False
    mine = record.to_message()
    compared = _COMPARED if timestamp_given else tuple(n for n in _COMPARED if n != "timestamp")
    return all(mine[name] == stored.get(name) for name in compared)


def mark_unchanged(batch: ValidatedBatch, stored: dict[str, dict[str, Any]]) -> None:
    for item in batch.valid:
        current = stored.get(item.record.id)
        if current is not None and is_unchanged(item.record, current, timestamp_given=item.timestamp_given):
            item.status = UNCHANGED
