"""Query-string parsing shared by the read routes: every failure names its parameter (→ 400)."""

from __future__ import annotations

import math
from datetime import datetime

import orjson
from fastapi import Request

from pipeline.errors import ValidationError
from pipeline.records import parse_timestamp

# The widest integer the graph, the broker and orjson all take (signed 64-bit): a larger one
# is the caller's error, not a store or serialisation failure (fuzzing found an offset that
# came back as a 500).
INT64_MAX = 2**63 - 1

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def raw(request: Request, name: str) -> str | None:
    value = request.query_params.get(name)
    return None if value is None or value.strip() == "" else value.strip()


def text_param(request: Request, name: str, max_chars: int) -> str | None:
    """A free-text parameter, refused past ``max_chars`` (its cost grows with its length)."""
    value = raw(request, name)
    if value is not None and len(value) > max_chars:
        raise ValidationError(f"{name}: {len(value)} characters exceeds the limit of {max_chars}")
    return value


def list_param(request: Request, name: str, split_commas: bool = True, max_items: int | None = None,
               max_item_chars: int | None = None) -> list[str]:
    """A list given as repeated parameters, a comma list, a JSON array, or any mix.

    ``max_items`` bounds the distinct values, ``max_item_chars`` each value's length: past
    either the parameter is refused, naming the limit.
    """
    values: list[str] = []
    for item in request.query_params.getlist(name):
        item = item.strip()
        if item.startswith("["):
            try:
                parsed = orjson.loads(item)
            except orjson.JSONDecodeError:
                raise ValidationError(f"{name}: not a valid JSON array") from None
            if not isinstance(parsed, list) or not all(isinstance(v, str) for v in parsed):
                raise ValidationError(f"{name}: expected an array of strings")
            values += [v.strip() for v in parsed if v.strip()]
        elif split_commas:
            values += [part.strip() for part in item.split(",") if part.strip()]
        elif item:
            values.append(item)
    distinct = list(dict.fromkeys(values))
    if max_items is not None and len(distinct) > max_items:
        raise ValidationError(f"{name}: {len(distinct)} values exceeds the limit of {max_items}")
    if max_item_chars is not None:
        for value in distinct:
            if len(value) > max_item_chars:
                raise ValidationError(f"{name}: a value of {len(value)} characters exceeds the limit of {max_item_chars}")
    return distinct


def bool_param(request: Request, name: str, default: bool | None) -> bool | None:
    value = raw(request, name)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValidationError(f"{name}: expected true or false, got {value!r}")


def choice(request: Request, name: str, allowed: tuple[str, ...], default: str | None) -> str | None:
    value = raw(request, name)
    if value is None:
        return default
    if value.lower() not in allowed:
        raise ValidationError(f"{name}: must be one of {', '.join(allowed)} (got {value!r})")
    return value.lower()


def int_param(request: Request, name: str, default: int | None, low: int, high: int | None = None,
              clamp_high: bool = False) -> int | None:
    value = raw(request, name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ValidationError(f"{name}: expected an integer, got {value!r}") from None
    if number < low:
        raise ValidationError(f"{name}: must be at least {low}")
    if number > INT64_MAX and (high is None or not clamp_high):
        raise ValidationError(f"{name}: must be at most {INT64_MAX}")
    if high is not None and number > high:
        if clamp_high:
            return high
        raise ValidationError(f"{name}: must be at most {high}")
    return number


def float_param(request: Request, name: str, default: float, low: float, high: float | None = None) -> float:
    value = raw(request, name)
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        raise ValidationError(f"{name}: expected a number, got {value!r}") from None
    if not math.isfinite(number) or number < low or (high is not None and number > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise ValidationError(f"{name}: must be a number {bound}")
    return number


def timestamp_param(request: Request, name: str) -> datetime | None:
    value = raw(request, name)
    return None if value is None else parse_timestamp(value, name)


def embedding_param(request: Request, size: int) -> list[float] | None:
    text = raw(request, "embedding")
    if text is None:
        return None
    try:
        values = orjson.loads(text) if text.startswith("[") else [float(x) for x in text.split(",")]
        vector = [float(x) for x in values]
    except (ValueError, TypeError, orjson.JSONDecodeError):
        raise ValidationError("embedding: expected comma-separated numbers or a JSON array") from None
    if not all(math.isfinite(x) for x in vector):
        raise ValidationError("embedding: values must be finite numbers")
    if len(vector) != size:
        raise ValidationError(f"embedding: has {len(vector)} dimensions, the collection uses {size}")
    return vector
