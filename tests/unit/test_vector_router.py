"""A recall that crosses a dimension migration's switch still searches a collection of its query's size."""

import fakeredis

from pipeline.config import Settings
from pipeline.query.candidates import cosine
from pipeline.services import Services
from pipeline.vectors.registry import CollectionRegistry
from pipeline.vectors.store import VectorPoint, VectorQuery, vector_payload


def _point(memory_id: str, dims: int) -> VectorPoint:
    vector = [0.0] * dims
    vector[0] = 1.0
    return VectorPoint(memory_id, vector, vector_payload({"id": memory_id, "content": memory_id, "tags": []}))


def test_a_query_embedded_before_the_switch_is_searched_in_the_collection_of_its_size(tmp_path):
    redis = fakeredis.FakeRedis()
    services = Services(Settings(embedding_provider="hash", vector_size=384, MEMPIPE_DATA_DIR=tmp_path), broker_redis=redis)
    router = services.vectors
    router.upsert([_point("old-size", 384)])

    # another process migrates to 64 dimensions and switches
    migrator = CollectionRegistry(redis, Settings(embedding_provider="hash", vector_size=64), cache_seconds=0)
    target = migrator.plan_target("run-1")
    services.vector_store(target).upsert([_point("new-size", 64)])
    assert migrator.switch("run-1") is not None
    assert services.collections.state(fresh=True).live == target

    query_before = VectorQuery([1.0] + [0.0] * 383, 5)  # embedded with the collection live a moment ago
    assert [h.memory_id for h in router.search(query_before)] == ["old-size"]
    assert [[h.memory_id for h in hits] for hits in router.search_many([query_before])] == [["old-size"]]
    query_after = VectorQuery([1.0] + [0.0] * 63, 5)
    assert [h.memory_id for h in router.search(query_after)] == ["new-size"]

    services.drop_vector_store(services.open_spec_of_size(384))
    assert services.open_spec_of_size(384) is None  # once the old collection is gone, the live store answers (and refuses)
    services.close_vector_stores()


def test_cosine_of_vectors_of_different_sizes_is_zero_not_an_error():
    assert cosine([1.0, 0.0], [1.0, 0.0, 0.0]) == 0.0
    assert cosine([1.0, 0.0], [1.0, 0.0]) == 1.0
