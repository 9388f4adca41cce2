"""The Edge payload layout: indexed fields native, the rest one document, read back as written."""

from pipeline.edge_payload import DOC_KEY, needs_document, pack_payload, unpack_payload

NATIVE = ("memory_id", "tag_prefixes", "importance")


def test_round_trip_keeps_indexed_fields_native():
    payload = {"memory_id": "m1", "tags": ["A", "b:c"], "tag_prefixes": ["a", "b", "b:c"], "importance": 0.5,
               "metadata": {"slack": {"channel": "general", "files": []}}, "type": None, "archived": False}
    packed = pack_payload(payload, NATIVE)
    assert set(packed) == {"memory_id", "tag_prefixes", "importance", DOC_KEY}
    assert isinstance(packed[DOC_KEY], str)
    assert unpack_payload(packed) == payload
    assert pack_payload({"importance": 0.2}, NATIVE) == {"importance": 0.2}  # no empty document


def test_legacy_points_and_stale_native_fields():
    legacy = {"memory_id": "m1", "metadata": {"k": 1}, "content": "x"}  # all native, as before the layout
    assert unpack_payload(legacy) == legacy
    stored = {"memory_id": "m1", "content": "old", DOC_KEY: '{"content":"new"}'}
    assert unpack_payload(stored) == {"memory_id": "m1", "content": "new"}
    assert unpack_payload(None) == {}


def test_which_partial_updates_touch_the_document():
    assert not needs_document({"importance": 0.9}, NATIVE)
    assert needs_document({"importance": 0.9, "relevance_score": 0.1}, NATIVE)


COVERED = {"tag_prefixes": "tags_lower"}


def test_covered_field_keeps_only_what_the_covering_field_lacks():
    payload = {"memory_id": "m1", "tags": ["Slack", "slack:channel:general"], "tags_lower": ["slack", "slack:channel:general"],
               "tag_prefixes": ["slack", "slack:channel", "slack:channel:general"], "content": "x"}
    packed = pack_payload(payload, NATIVE + ("tags_lower",), COVERED)
    assert packed["tag_prefixes"] == ["slack:channel"]  # the whole tags are filtered through tags_lower
    assert packed["tags_lower"] == ["slack", "slack:channel:general"]
    # native prefixes + whole tags = the full prefix set a filter asked for before
    assert set(packed["tag_prefixes"]) | set(packed["tags_lower"]) == set(payload["tag_prefixes"])
    assert unpack_payload(packed) == payload  # read back as written, full list and order
    # without the covering field nothing is trimmed
    assert pack_payload({"tag_prefixes": ["a", "a:b"]}, NATIVE, COVERED) == {"tag_prefixes": ["a", "a:b"]}


def test_partial_updates_of_a_covered_pair_merge_with_the_stored_payload():
    native = NATIVE + ("tags_lower",)
    assert needs_document({"tag_prefixes": ["a"]}, native, COVERED)
    assert needs_document({"tags_lower": ["a"]}, native, COVERED)
    assert not needs_document({"importance": 0.9}, native, COVERED)
