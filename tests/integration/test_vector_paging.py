"""The vector-store methods maintenance relies on behave the same on both backends."""

from __future__ import annotations

import pytest

from pipeline.config import Settings
from pipeline.graph import Scope, TagFilter
from pipeline.vectors import EdgeVectorStore, QdrantServerVectorStore, VectorPoint, VectorQuery, archived_payload, vector_payload

pytestmark = pytest.mark.integration
SIZE = 8


@pytest.fixture(params=["edge", "server"])
def vectors(request, tmp_path):
    store = (EdgeVectorStore(str(tmp_path / "shard"), SIZE) if request.param == "edge"
             else QdrantServerVectorStore.connect(Settings(qdrant_url=":memory:"), SIZE))
    store.ensure_collection()
    yield store
    store.close()


def point(i: int, **extra) -> VectorPoint:
    vector = [0.0] * SIZE
    vector[i % SIZE] = 1.0
    memory = {"id": f"m{i}", "content": f"c{i}", "tags": ["t"], "importance": 0.5, "type": "Context",
              "timestamp": "2025-01-01T00:00:00+00:00", **extra}
    return VectorPoint(f"m{i}", vector, vector_payload(memory))


def test_scroll_retrieve_patch_count_and_archived_exclusion(vectors):
    vectors.upsert([point(i) for i in range(7)] + [point(7, type="MetaPattern")])
    seen, offset, pages = [], None, 0
    while True:
        page, offset = vectors.scroll(offset, 3, with_vectors=True)
        seen += page
        pages += 1
        if offset is None:
            break
    assert sorted(r.memory_id for r in seen) == [f"m{i}" for i in range(8)] and pages == 3
    assert all(len(r.vector) == SIZE for r in seen)
    found = vectors.retrieve(["m1", "m2", "missing"])
    assert set(found) == {"m1", "m2"} and found["m1"].vector is None
    assert vectors.count_memories(frozenset({"MetaPattern"})) == 7 and vectors.count() == 8

    vectors.set_payloads({"m1": {"summary": "old"}, "m2": archived_payload("2026-01-01")})
    assert vectors.retrieve(["m1"])["m1"].payload["summary"] == "old"  # merged into the payload
    near_m2 = [0.0] * SIZE
    near_m2[2] = 1.0
    hits = [h.memory_id for h in vectors.search(VectorQuery(near_m2, 8))]
    assert "m2" not in hits and "m1" in hits  # archived points are out of every search
    archived = point(3, archived=True)
    assert archived.payload["lifecycle"] == "archived"  # what every search filters on


def test_a_replaced_payload_is_the_whole_payload(vectors):
    """set_payloads merges; replace_payloads writes the whole payload, so a field the new one
    lacks (a summary re-enrichment took away) leaves the point, and the rest still filters."""
    vectors.upsert([point(1, summary="old", duplicate_of="m0"), point(2)])
    whole = point(1, tags=["u"]).payload
    vectors.replace_payloads({"m1": whole})
    stored = vectors.retrieve(["m1", "m2"])
    assert stored["m1"].payload == whole and stored["m2"].payload == point(2).payload
    near_m1 = point(1).vector
    assert [h.memory_id for h in vectors.search(VectorQuery(near_m1, 2, Scope(TagFilter(("u",)))))] == ["m1"]


def test_search_excludes_archived_and_excluded_types_even_when_nearest(vectors):
    """The Edge store searches without the exclusions first and again with them when a hit
    is excluded: the excluded points here are the nearest ones, so the second search runs."""
    vectors.upsert([point(i) for i in range(6)] + [point(6, type="MetaPattern")])
    vectors.set_payloads({"m5": archived_payload("2026-01-01")})
    near = [0.0] * SIZE
    near[6], near[5] = 1.0, 0.9  # m6 nearest, then m5
    scope = Scope(excluded_types=frozenset({"MetaPattern"}))
    for with_payload in (True, False):
        hits = vectors.search(VectorQuery(near, 3, scope, with_payload=with_payload))
        ids = [h.memory_id for h in hits]
        assert len(ids) == 3 and "m6" not in ids and "m5" not in ids
    # Without the type exclusion the MetaPattern point is the nearest hit; archived stays out.
    assert [h.memory_id for h in vectors.search(VectorQuery(near, 3))][0] == "m6"
    assert "m5" not in [h.memory_id for h in vectors.search(VectorQuery(near, 7))]


def test_existing_names_the_memories_with_a_point_without_reading_payloads(vectors):
    vectors.upsert([point(i) for i in range(4)])
    vectors.delete(["m2"])
    assert vectors.existing(["m0", "m2", "m3", "m9"]) == {"m0", "m3"}
    assert vectors.existing([]) == set()
