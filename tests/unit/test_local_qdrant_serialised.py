"""The local-mode Qdrant client (the tests' server stand-in) is used from several threads at once."""

import threading
import uuid

from qdrant_client import QdrantClient, models

from pipeline.config import Settings
from pipeline.vectors.server import QdrantServerVectorStore, SerialisedClient


def test_local_modes_get_a_serialised_client_and_a_server_url_does_not():
    assert isinstance(QdrantServerVectorStore.client_for(Settings(qdrant_url=":memory:")), SerialisedClient)
    remote = QdrantServerVectorStore.client_for(Settings(qdrant_url="http://127.0.0.1:6333"))
    assert not isinstance(remote, SerialisedClient)


def test_concurrent_upserts_and_searches_on_one_local_collection_neither_fail_nor_lose_points():
    client = SerialisedClient(QdrantClient(":memory:"))
    client.create_collection("c", vectors_config=models.VectorParams(size=8, distance=models.Distance.COSINE))
    errors: list[Exception] = []

    def writer(seed: int) -> None:
        try:
            for run in range(20):
                client.upsert("c", points=[models.PointStruct(id=str(uuid.uuid4()), vector=[seed + run + i / 10] * 8,
                                                              payload={"seed": seed}) for i in range(10)])
                client.query_points("c", query=[1.0] * 8, limit=3)
        except Exception as exc:  # a torn collection raises from numpy
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[:3]
    assert client.count("c").count == 8 * 20 * 10
