"""Integers past signed 64 bits are the caller's error (400), not a store or serialisation failure (500)."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from api.params import INT64_MAX, int_param
from pipeline.errors import ValidationError


def _request(query: str) -> Request:
    return Request({"type": "http", "method": "GET", "path": "/", "query_string": query.encode(), "headers": []})


def test_unbounded_parameter_refuses_past_int64():
    assert int_param(_request(f"offset={INT64_MAX}"), "offset", 0, 0) == INT64_MAX
    with pytest.raises(ValidationError, match="^offset: must be at most"):
        int_param(_request("offset=140126271337760258164824997888"), "offset", 0, 0)


def test_clamped_parameter_still_clamps_huge_values():
    assert int_param(_request("limit=434763598797004028772352"), "limit", 20, 1, 200, clamp_high=True) == 200
