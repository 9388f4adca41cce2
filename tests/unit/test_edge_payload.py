"""The Edge payload layout: indexed fields native, the rest one document, read back as written."""

from pipeline.vectors.edge_payload import DOC_KEY, needs_document, pack_payload, unpack_payload

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


def test_the_persist_stage_packs_edge_payloads_that_the_vector_stage_writes_as_they_are():
    import orjson

    from pipeline.actors.persist import vector_work_item
    from pipeline.actors.vectors import _payload
    from pipeline.records import point_id_for
    from pipeline.vectors import EdgeVectorStore, edge_packed_payload, plain_payload, vector_payload
    from pipeline.vectors.edge_payload import PackedPayload

    memory = {"id": "slack:T1:C1:1.2", "content": "hello", "tags": ["slack", "slack:channel:general"],
              "type": "Context", "importance": 0.5, "timestamp": "2024-01-01T00:00:00+00:00", "metadata": {"k": [1, 2]}}
    plain = vector_work_item(memory, "store")
    assert "payload" in plain and "edge_payload" not in plain  # a Qdrant server: as before
    packed = orjson.loads(orjson.dumps(vector_work_item(memory, "store", edge=True)))  # across the broker
    assert packed["point_id"] == point_id_for(memory["id"]) and "payload" not in packed
    assert packed["edge_payload"] == edge_packed_payload(vector_payload(memory))
    assert packed["edge_payload"]["tag_prefixes"] == ["slack:channel"]  # trimmed, as the store would
    payload = _payload(packed)
    assert isinstance(payload, PackedPayload) and EdgeVectorStore._pack(payload) is payload  # not packed twice
    assert plain_payload(payload) == vector_payload(memory)  # what a server backend would be given
    assert _payload(plain) == plain["payload"]  # messages queued before this change still work


def test_the_embedded_store_gets_its_plain_size_from_the_settings():
    from pipeline.config import Settings
    from pipeline.vectors import EdgeVectorStore, build_vector_store

    store = build_vector_store(Settings(edge_plain_max_points=1234), 8)  # nothing opened yet
    assert isinstance(store, EdgeVectorStore) and store._plain_max_points == 1234
    assert Settings().edge_plain_max_points == 20_000  # the default: past it the graph, built in a child


def test_a_payload_changes_only_when_a_value_it_holds_differs():
    from pipeline.vectors import payload_changed

    stored = {"memory_id": "m1", "tags": ["a"], "importance": 1, "summary": None, "metadata": {"k": [1, 2]}}
    # as the graph gives it back: no null property, floats where JSON had an int, tuples as lists
    assert not payload_changed({"memory_id": "m1", "tags": ("a",), "importance": 1.0, "metadata": {"k": [1, 2]}}, stored)
    assert payload_changed({"memory_id": "m1", "tags": ["a", "entity:people:rachel"], "importance": 1.0,
                            "metadata": {"k": [1, 2]}}, stored)
    assert payload_changed({**stored, "summary": "short"}, stored)
    assert payload_changed({**stored, "metadata": {"k": [2, 1]}}, stored)
