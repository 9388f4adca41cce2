"""Reading a request body with a size bound, and JSON with a clear error for malformed input."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import Request

from pipeline.errors import PayloadTooLarge, ValidationError


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
