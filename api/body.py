"""Reading a request body with a size bound, and JSON with a clear error for malformed input."""

from __future__ import annotations

from typing import Any, TypeVar

import orjson
from fastapi import Request
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from pipeline.errors import PayloadTooLarge, ValidationError
from pipeline.records import _format_pydantic_error

Model = TypeVar("Model", bound=BaseModel)


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The raw body, refused with 413 as soon as it is known to exceed ``max_bytes``."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise PayloadTooLarge(f"body: {declared} bytes exceeds the limit of {max_bytes}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise PayloadTooLarge(f"body: exceeds the limit of {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json(request: Request, max_bytes: int) -> Any:
    raw = await read_body(request, max_bytes)
    if not raw.strip():
        raise ValidationError("body: expected a JSON object")
    return parse_json(raw)


def parse_json(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ValidationError(f"body: malformed JSON ({exc})") from None


async def optional_json(request: Request, max_bytes: int) -> Any:
    """An empty body means all defaults; a body past ``max_bytes`` is refused (413) unread."""
    raw = await read_body(request, max_bytes)
    if not raw.strip():
        return {}
    return parse_json(raw)


def parse_body(model: type[Model], raw: Any) -> Model:
    """``raw`` (parsed JSON) as ``model``; anything else is a 400 naming the field."""
    if not isinstance(raw, dict):
        raise ValidationError("body: expected a JSON object")
    try:
        return model.model_validate(raw)
    except PydanticValidationError as exc:
        raise ValidationError(_format_pydantic_error(exc)) from None


async def read_model(request: Request, model: type[Model], max_bytes: int) -> Model:
    """An optional JSON body as ``model`` (an empty one is all its defaults)."""
    return parse_body(model, await optional_json(request, max_bytes))
