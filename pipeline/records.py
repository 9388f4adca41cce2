"""Memory records: validation of what clients send, and the record the pipeline carries.

A ``MemoryRecord`` is what a persist message holds: everything the stages need, already
validated and normalised, so a redelivered message writes exactly the same thing again.
"""

from __future__ import annotations

import functools
import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, StrictStr, field_validator
from pydantic import ValidationError as PydanticValidationError

from pipeline.errors import ValidationError

if TYPE_CHECKING:
    from pipeline.config import Settings

MEMORY_TYPES: tuple[str, ...] = ("Decision", "Pattern", "Preference", "Style", "Habit", "Insight", "Context")
"""Types a client may give (AutoMem's). Internal artifact types such as MetaPattern are not writable."""

_TYPE_BY_LOWER = {t.lower(): t for t in MEMORY_TYPES}
_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:\-]{0,127}$")
DEFAULT_IMPORTANCE = 0.5
DEFAULT_EXPLICIT_TYPE_CONFIDENCE = 0.9

# Point ids in Qdrant must be UUIDs (or integers); client-chosen ids that are not UUIDs map
# deterministically onto one, so the same memory id always lands on the same point.
_POINT_NAMESPACE = uuid.UUID("6f1c3f7e-6d0b-4f0a-9a3e-6d656d706970")


def now_utc() -> datetime:
    return datetime.now(timezone.utc)


def iso(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).isoformat()


def arrival_of(moment: datetime, index: int = 0) -> int:
    """The acceptance order key of the ``index``-th item accepted at ``moment``."""
    return int(moment.timestamp() * 1_000_000) + index


def new_memory_id() -> str:
    return str(uuid.uuid4())


def point_id_for(memory_id: str) -> str:
    try:
        return str(uuid.UUID(memory_id))
    except ValueError:
        return str(uuid.uuid5(_POINT_NAMESPACE, memory_id))


def tag_prefixes(tags: list[str]) -> list[str]:
    """Each tag's colon-segment prefixes, lower-cased, deduplicated, in first-seen order.

    ``slack:channel:general`` → ``slack``, ``slack:channel``, ``slack:channel:general``; a
    prefix filter then becomes an exact membership test that a keyword index serves.
    """
    return list(dict.fromkeys(prefix for tag in tags for prefix in _prefixes_of(tag)))


@functools.lru_cache(maxsize=65_536)
def _prefixes_of(tag: str) -> tuple[str, ...]:
    # Tags repeat across memories (a channel, a user, a source), and every write computes
    # these for the graph and again for the vector payload: a lookup instead of a split-join.
    parts = tag.lower().split(":")
    return tuple(":".join(parts[:end]) for end in range(1, len(parts) + 1))


def parse_timestamp(value: Any, field_name: str) -> datetime:
    """ISO 8601 (``Z`` allowed; naive means UTC) or epoch seconds → aware UTC datetime."""
    if isinstance(value, bool):
        raise ValidationError(f"{field_name}: expected an ISO 8601 timestamp")
    if isinstance(value, (int, float)):
        try:
            return datetime.fromtimestamp(float(value), tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            raise ValidationError(f"{field_name}: epoch seconds out of range") from None
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{field_name}: expected an ISO 8601 timestamp")
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        raise ValidationError(f"{field_name}: {value!r} is not an ISO 8601 timestamp") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


class Limits(BaseModel, frozen=True):
    """Input limits (kept apart so validation needs no Settings; ``from_settings`` builds them)."""

    content_max_chars: int
    max_tags: int
    max_tag_length: int
    max_metadata_bytes: int
    max_metadata_depth: int
    vector_size: int

    @classmethod
    def from_settings(cls, settings: Settings, vector_size: int) -> Limits:
        """The settings' limits; ``vector_size`` is the embedder's (a client-sent embedding must match)."""
        return cls(
            content_max_chars=settings.memory_content_hard_limit,
            max_tags=settings.max_tags,
            max_tag_length=settings.max_tag_length,
            max_metadata_bytes=settings.max_metadata_bytes,
            max_metadata_depth=settings.max_metadata_depth,
            vector_size=vector_size,
        )


class _MemoryFields(BaseModel):
    """AutoMem's memory body. Unknown keys are ignored, as AutoMem does."""

    model_config = ConfigDict(extra="ignore")

    content: StrictStr | None = None
    tags: list[StrictStr] | None = None
    importance: float | None = Field(None, ge=0.0, le=1.0)
    confidence: float | None = Field(None, ge=0.0, le=1.0)
    type: StrictStr | None = None
    timestamp: Any = None
    t_valid: Any = None
    t_invalid: Any = None
    metadata: dict[str, Any] | None = None
    embedding: list[float] | None = None

    @field_validator("importance", "confidence", mode="before")
    @classmethod
    def _no_bools(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("expected a number between 0 and 1")
        return value


class _NewMemory(_MemoryFields):
    id: StrictStr | None = None
    memory_id: StrictStr | None = None


@dataclass
class MemoryRecord:
    """A validated memory as the pipeline stores it."""

    id: str
    content: str
    tags: list[str]
    importance: float
    confidence: float | None
    type: str | None
    type_source: str | None
    timestamp: str
    updated_at: str
    metadata: dict[str, Any] = field(default_factory=dict)
    t_valid: str | None = None
    t_invalid: str | None = None
    embedding: list[float] | None = None
    # Order of acceptance (microseconds since the epoch, plus the item's index in its batch):
    # breaks timestamp ties in a scope's PRECEDED_BY chain, so a batch of chat turns sharing one
    # timestamp keeps the order it was sent in. Stored once, on the memory's first write.
    arrival: int | None = None

    @property
    def tag_prefixes(self) -> list[str]:
        return tag_prefixes(self.tags)

    def to_message(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "content": self.content,
            "tags": self.tags,
            "importance": self.importance,
            "confidence": self.confidence,
            "type": self.type,
            "type_source": self.type_source,
            "timestamp": self.timestamp,
            "updated_at": self.updated_at,
            "metadata": self.metadata,
            "t_valid": self.t_valid,
            "t_invalid": self.t_invalid,
            "embedding": self.embedding,
            "arrival": self.arrival,
        }

    @classmethod
    def from_message(cls, data: dict[str, Any]) -> "MemoryRecord":
        return cls(**data)

    def public_view(self) -> dict[str, Any]:
        """The memory as GET /memory shows it (no embedding)."""
        view = self.to_message()
        view.pop("embedding")
        view.pop("type_source")
        view.pop("arrival")
        view["tag_prefixes"] = self.tag_prefixes
        return view


def _format_pydantic_error(exc: PydanticValidationError) -> str:
    first = exc.errors()[0]
    location = ".".join(str(part) for part in first["loc"]) or "body"
    return f"{location}: {first['msg']}"


def _depth(value: Any, level: int = 1) -> int:
    if isinstance(value, dict):
        children = value.values()
    elif isinstance(value, list):
        children = value
    else:
        return level
    # Recurse into containers only: a call per scalar was most of validating a Slack memory.
    deepest = level + 1 if children else level
    for child in children:
        if isinstance(child, (dict, list)):
            deepest = max(deepest, _depth(child, level + 1))
    return deepest


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def _check_content(content: str | None, limits: Limits) -> str:
    if content is None:
        raise ValidationError("content: field required")
    if not content.strip():
        raise ValidationError("content: must not be empty")
    if "\x00" in content:
        raise ValidationError("content: NUL bytes are not allowed")
    if len(content) > limits.content_max_chars:
        raise ValidationError(
            f"content: {len(content)} characters exceeds the limit of {limits.content_max_chars}"
        )
    return content


def _check_tags(tags: list[str], limits: Limits) -> list[str]:
    if len(tags) > limits.max_tags:
        raise ValidationError(f"tags: {len(tags)} tags exceeds the limit of {limits.max_tags}")
    cleaned: list[str] = []
    for index, tag in enumerate(tags):
        tag = tag.strip()
        if not tag:
            raise ValidationError(f"tags.{index}: must not be empty")
        if "\x00" in tag:
            raise ValidationError(f"tags.{index}: NUL bytes are not allowed")
        if len(tag) > limits.max_tag_length:
            raise ValidationError(f"tags.{index}: longer than {limits.max_tag_length} characters")
        if tag not in cleaned:
            cleaned.append(tag)
    return cleaned


def _check_type(value: str | None) -> str | None:
    if value is None:
        return None
    canonical = _TYPE_BY_LOWER.get(value.strip().lower())
    if canonical is None:
        raise ValidationError(f"type: {value!r} is not one of {', '.join(MEMORY_TYPES)}")
    return canonical


def _check_metadata(metadata: dict[str, Any], limits: Limits) -> dict[str, Any]:
    try:
        encoded = orjson.dumps(metadata)
    except TypeError as exc:
        raise ValidationError(f"metadata: not JSON-serialisable ({exc})") from None
    if len(encoded) > limits.max_metadata_bytes:
        raise ValidationError(f"metadata: {len(encoded)} bytes exceeds the limit of {limits.max_metadata_bytes}")
    if _depth(metadata) > limits.max_metadata_depth:
        raise ValidationError(f"metadata: nested deeper than {limits.max_metadata_depth} levels")
    # The graph cannot store a NUL (FalkorDB's parameters stop at it). The encoding writes any
    # NUL as \u0000, so a byte search clears nearly every body without walking it.
    if b"\\u0000" in encoded and _has_nul(metadata):
        raise ValidationError("metadata: NUL bytes are not allowed (in a key or a value)")
    return metadata


def _check_embedding(embedding: list[float] | None, limits: Limits) -> list[float] | None:
    if embedding is None:
        return None
    if len(embedding) != limits.vector_size:
        raise ValidationError(
            f"embedding: has {len(embedding)} dimensions, the collection uses {limits.vector_size}"
        )
    return [float(x) for x in embedding]


def _optional_time(value: Any, name: str) -> str | None:
    return None if value is None else iso(parse_timestamp(value, name))


def _check_id(value: str) -> str:
    if not _ID_PATTERN.match(value):
        raise ValidationError(
            "id: 1-128 characters of letters, digits and . _ : - (starting with a letter or digit)"
        )
    return value


def _parse(model: type[BaseModel], body: Any) -> Any:
    if not isinstance(body, dict):
        raise ValidationError("body: expected a JSON object")
    for name in ("metadata",):
        if name in body and body[name] is not None and not isinstance(body[name], dict):
            raise ValidationError(f"{name}: expected a JSON object")
    if "tags" in body and body["tags"] is not None and not isinstance(body["tags"], list):
        raise ValidationError("tags: expected a list of strings")
    try:
        return model.model_validate(body)
    except PydanticValidationError as exc:
        raise ValidationError(_format_pydantic_error(exc)) from None


def build_new_record(body: Any, limits: Limits, *, now: datetime | None = None) -> MemoryRecord:
    """Validate a POST /memory body into the record the pipeline will store."""
    fields: _NewMemory = _parse(_NewMemory, body)
    now = now or now_utc()
    client_id = fields.id or fields.memory_id
    memory_type = _check_type(fields.type)
    confidence = fields.confidence
    if memory_type and confidence is None:
        confidence = DEFAULT_EXPLICIT_TYPE_CONFIDENCE
    return MemoryRecord(
        id=_check_id(client_id) if client_id else new_memory_id(),
        content=_check_content(fields.content, limits),
        tags=_check_tags(fields.tags or [], limits),
        importance=DEFAULT_IMPORTANCE if fields.importance is None else fields.importance,
        confidence=confidence,
        type=memory_type,
        type_source="explicit" if memory_type else None,
        timestamp=iso(parse_timestamp(fields.timestamp, "timestamp")) if fields.timestamp is not None else iso(now),
        updated_at=iso(now),
        metadata=_check_metadata(fields.metadata or {}, limits),
        t_valid=_optional_time(fields.t_valid, "t_valid"),
        t_invalid=_optional_time(fields.t_invalid, "t_invalid"),
        embedding=_check_embedding(fields.embedding, limits),
        arrival=arrival_of(now),
    )


def build_patch(body: Any, limits: Limits, *, now: datetime | None = None) -> dict[str, Any]:
    """Validate a PATCH /memory/{id} body into the changed fields (at least one)."""
    if isinstance(body, dict) and ("id" in body or "memory_id" in body):
        raise ValidationError("id: a memory's id cannot be changed")
    fields: _MemoryFields = _parse(_MemoryFields, body)
    given = fields.model_fields_set
    if not given:
        raise ValidationError("body: give at least one of content, tags, importance, type, confidence, timestamp, metadata")
    changes: dict[str, Any] = {}
    if "content" in given:
        changes["content"] = _check_content(fields.content, limits)
    if "tags" in given:
        changes["tags"] = _check_tags(fields.tags or [], limits)
    for name in ("importance", "confidence"):
        if name in given:
            value = getattr(fields, name)
            if value is None:
                raise ValidationError(f"{name}: expected a number between 0 and 1")
            changes[name] = value
    if "type" in given:
        changes["type"] = _check_type(fields.type)
        changes["type_source"] = "explicit" if changes["type"] else None
    if "timestamp" in given:
        if fields.timestamp is None:
            raise ValidationError("timestamp: expected an ISO 8601 timestamp")
        changes["timestamp"] = iso(parse_timestamp(fields.timestamp, "timestamp"))
    for name in ("t_valid", "t_invalid"):
        if name in given:
            changes[name] = _optional_time(getattr(fields, name), name)
    if "metadata" in given:
        changes["metadata"] = _check_metadata(fields.metadata or {}, limits)
    if "embedding" in given:
        changes["embedding"] = _check_embedding(fields.embedding, limits)
    changes["updated_at"] = iso(now or now_utc())
    return changes
