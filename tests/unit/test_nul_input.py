"""NUL characters: FalkorDB cannot take them in a parameter, so they are the caller's error (400), never a store error."""

from __future__ import annotations

import pytest

from pipeline.errors import ValidationError
from pipeline.graph import GraphStore
from pipeline.config import Settings
from pipeline.records import Limits, build_new_record, build_patch


@pytest.mark.parametrize("body, field", [
    ({"content": "ok", "tags": ["fine", "bad\x00tag"]}, "tags.1"),
    ({"content": "ok", "metadata": {"nested": {"list": ["x\x00"]}}}, "metadata"),
    ({"content": "ok", "metadata": {"key\x00": 1}}, "metadata"),
    ({"content": "bad\x00content"}, "content"),
])
def test_records_refuse_nul_naming_the_field(body, field):
    with pytest.raises(ValidationError, match=rf"^{field}: NUL"):
        build_new_record(body, Limits.from_settings(Settings(), vector_size=384))
    patch = {k: v for k, v in body.items() if k != "content" or "\x00" in v}
    with pytest.raises(ValidationError, match=rf"^{field}: NUL"):
        build_patch(patch, Limits.from_settings(Settings(), vector_size=384))


def test_the_text_of_an_escape_is_not_a_nul():
    record = build_new_record({"content": "ok", "metadata": {"a": "\\u0000"}}, Limits.from_settings(Settings(), vector_size=384))
    assert record.metadata == {"a": "\\u0000"}


class _Untouchable:
    def select_graph(self, name):
        return self

    def query(self, *args, **kwargs):
        raise AssertionError("the graph must not be queried with a NUL parameter")

    ro_query = query


@pytest.mark.parametrize("params", [{"ids": ["a", "b\x00"]}, {"id": "x\x00"}, {"rows": [{"k\x00": "v"}]}])
def test_graph_store_refuses_nul_parameters_before_querying(params):
    store = GraphStore(_Untouchable(), "g")
    with pytest.raises(ValidationError, match="NUL"):
        store._read("MATCH (m) WHERE m.id IN $ids RETURN m", params)
    with pytest.raises(ValidationError, match="NUL"):
        store._query("MATCH (m) WHERE m.id IN $ids RETURN m", params)
