"""The Edge payload layout: nested values packed per key, read back exactly as written."""

from pipeline.edge_payload import pack_payload, unpack_payload


def test_round_trip_keeps_indexed_fields_native():
    payload = {"memory_id": "m1", "tags": ["A", "b:c"], "tag_prefixes": ["a", "b", "b:c"], "importance": 0.5,
               "metadata": {"slack": {"channel": "general", "files": []}}, "type": None, "archived": False}
    packed = pack_payload(payload, ("memory_id", "tag_prefixes"))
    assert packed["tag_prefixes"] == ["a", "b", "b:c"] and packed["memory_id"] == "m1"
    assert "metadata" not in packed and isinstance(packed["metadata__json"], str)
    assert "tags" not in packed and isinstance(packed["tags__json"], str)
    assert unpack_payload(packed) == payload


def test_packed_value_wins_over_a_stale_native_one():
    # A point written before the layout, then partially updated: both forms are stored.
    stored = {"metadata": {"old": 1}, "metadata__json": '{"new":2}', "content": "x"}
    assert unpack_payload(stored) == {"metadata": {"new": 2}, "content": "x"}
    assert unpack_payload(None) == {}
