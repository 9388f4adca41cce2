from datetime import datetime, timezone

import pytest

from pipeline.errors import ValidationError
from pipeline.records import Limits, build_new_record, build_patch, point_id_for, tag_prefixes

LIMITS = Limits(content_max_chars=100, max_tags=3, max_tag_length=20, max_metadata_bytes=200, max_metadata_depth=3, vector_size=4)
NOW = datetime(2025, 1, 15, 10, 30, tzinfo=timezone.utc)


def test_tag_prefixes_are_lowercased_segment_prefixes():
    assert tag_prefixes(["slack:channel:General"]) == ["slack", "slack:channel", "slack:channel:general"]
    assert tag_prefixes(["a:b", "A:c", "a"]) == ["a", "a:b", "a:c"]


def test_defaults_and_normalisation():
    record = build_new_record({"content": "hello", "tags": ["x", "x", " y "], "type": "decision"}, LIMITS, now=NOW)
    assert record.tags == ["x", "y"]
    assert record.type == "Decision" and record.type_source == "explicit"
    assert record.confidence == 0.9  # AutoMem's default for an explicit type
    assert record.importance == 0.5
    assert record.timestamp == "2025-01-15T10:30:00+00:00"
    assert len(record.id) == 36


def test_timestamp_forms():
    z = build_new_record({"content": "c", "timestamp": "2024-05-01T12:00:00Z"}, LIMITS)
    naive = build_new_record({"content": "c", "timestamp": "2024-05-01T12:00:00"}, LIMITS)
    epoch = build_new_record({"content": "c", "timestamp": 1714564800}, LIMITS)
    assert z.timestamp == naive.timestamp == epoch.timestamp == "2024-05-01T12:00:00+00:00"


def test_client_id_kept_and_point_id_is_stable_uuid():
    record = build_new_record({"content": "c", "id": "slack:T1:C1:1700000000.000100"}, LIMITS)
    assert record.id == "slack:T1:C1:1700000000.000100"
    assert point_id_for(record.id) == point_id_for(record.id)
    assert point_id_for("8f3a2c1e-5b7d-4e9a-a1c3-2d4f6b8e0a91") == "8f3a2c1e-5b7d-4e9a-a1c3-2d4f6b8e0a91"


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "content"),
        ({"content": ""}, "content"),
        ({"content": "   "}, "content"),
        ({"content": "x" * 101}, "content"),
        ({"content": 5}, "content"),
        ({"content": "a\x00b"}, "content"),
        ({"content": "c", "tags": "notalist"}, "tags"),
        ({"content": "c", "tags": [1, 2]}, "tags"),
        ({"content": "c", "tags": ["a", "b", "c", "d"]}, "tags"),
        ({"content": "c", "tags": ["x" * 21]}, "tags"),
        ({"content": "c", "tags": [""]}, "tags"),
        ({"content": "c", "importance": 1.5}, "importance"),
        ({"content": "c", "importance": -0.1}, "importance"),
        ({"content": "c", "importance": "high"}, "importance"),
        ({"content": "c", "importance": True}, "importance"),
        ({"content": "c", "confidence": 2}, "confidence"),
        ({"content": "c", "timestamp": "yesterday-ish"}, "timestamp"),
        ({"content": "c", "type": "Rumour"}, "type"),
        ({"content": "c", "metadata": [1]}, "metadata"),
        ({"content": "c", "metadata": "x"}, "metadata"),
        ({"content": "c", "metadata": {"k": "v" * 300}}, "metadata"),
        ({"content": "c", "metadata": {"a": {"b": {"c": {"d": 1}}}}}, "metadata"),
        ({"content": "c", "embedding": [0.1, 0.2]}, "embedding"),
        ({"content": "c", "id": "has space"}, "id"),
        ({"content": "c", "id": "x" * 200}, "id"),
    ],
)
def test_bad_input_names_the_field(body, field):
    with pytest.raises(ValidationError) as raised:
        build_new_record(body, LIMITS)
    assert raised.value.message.startswith(field), raised.value.message


def test_body_must_be_an_object():
    with pytest.raises(ValidationError, match="body"):
        build_new_record(["content"], LIMITS)


def test_patch_returns_only_changed_fields():
    changes = build_patch({"content": "new", "tags": ["A:b"]}, LIMITS, now=NOW)
    assert changes == {"content": "new", "tags": ["A:b"], "updated_at": "2025-01-15T10:30:00+00:00"}


@pytest.mark.parametrize("body", [{}, {"id": "other"}, {"importance": None}, {"content": ""}, {"timestamp": None}])
def test_bad_patches(body):
    with pytest.raises(ValidationError):
        build_patch(body, LIMITS)
