"""The Qdrant server backend, through ``qdrant-client`` (``QDRANT_URL``).

``:memory:`` selects qdrant-client's local mode, which tests use as the server stand-in;
``local:<path>`` its local mode on disk.
"""

from __future__ import annotations

import threading
from typing import Any

from pipeline.config import Settings
from pipeline.graph import Scope
from pipeline.records import point_id_for
from pipeline.vectors.store import (
    FLOAT_INDEXES,
    KEYWORD_INDEXES,
    VectorHit,
    VectorPoint,
    VectorQuery,
    VectorRecord,
    build_filter,
    plain_payload,
    size_mismatch,
    stored_record,
)


def _as_list(vector: Any) -> list[float]:
    """qdrant-client wants a list; the vector stage hands Edge ``array('f')`` (packing.unpack_vector_f32)."""
    return vector if isinstance(vector, list) else list(vector)



class QdrantServerVectorStore:
    backend = "qdrant-server"

    def __init__(self, client, collection: str, vector_size: int):
        from qdrant_client import models

        self._client = client
        self._models = models
        self._collection = collection
        self._size = vector_size

    @staticmethod
    def client_for(settings: Settings):
        from qdrant_client import QdrantClient

        if settings.qdrant_url == ":memory:":
            return SerialisedClient(QdrantClient(":memory:"))
        if settings.qdrant_url.startswith("local:"):  # local mode on disk: one process, survives restarts
            return SerialisedClient(QdrantClient(path=settings.qdrant_url.removeprefix("local:")))
        return QdrantClient(url=settings.qdrant_url, api_key=settings.qdrant_api_key, timeout=10)

    @classmethod
    def connect(cls, settings: Settings, vector_size: int) -> "QdrantServerVectorStore":
        return cls(cls.client_for(settings), settings.qdrant_collection, vector_size)

    def ensure_collection(self) -> None:
        m = self._models
        if self._client.collection_exists(self._collection):
            params = self._client.get_collection(self._collection).config.params.vectors
            size = params.size if hasattr(params, "size") else None
            if size != self._size:
                raise size_mismatch(size, self._size)
        else:
            self._client.create_collection(
                self._collection, vectors_config=m.VectorParams(size=self._size, distance=m.Distance.COSINE)
            )
        for name in KEYWORD_INDEXES:
            self._client.create_payload_index(self._collection, name, m.PayloadSchemaType.KEYWORD)
        for name in FLOAT_INDEXES:
            self._client.create_payload_index(self._collection, name, m.PayloadSchemaType.FLOAT)

    def _filter(self, query: VectorQuery):
        m = self._models
        return build_filter(
            query.scope,
            field=lambda key, match: m.FieldCondition(key=key, match=match),
            one=lambda value: m.MatchValue(value=value),
            any_of=lambda values: m.MatchAny(any=values),
            range_=lambda key, gte, lte: m.FieldCondition(key=key, range=m.Range(gte=gte, lte=lte)),
            either=lambda conditions: m.Filter(should=conditions),
            combine=lambda must, must_not: m.Filter(must=must or None, must_not=must_not or None),
        )

    def upsert(self, points: list[VectorPoint]) -> None:
        structs = [
            self._models.PointStruct(id=point_id_for(p.memory_id), vector=_as_list(p.vector), payload=plain_payload(p.payload))
            for p in points
        ]
        self._client.upsert(self._collection, structs, wait=True)

    def delete(self, memory_ids: list[str]) -> None:
        self._client.delete(
            self._collection, self._models.PointIdsList(points=[point_id_for(m) for m in memory_ids]), wait=True
        )

    def set_payload(self, memory_id: str, payload: dict[str, Any]) -> None:
        self._client.set_payload(self._collection, payload, points=[point_id_for(memory_id)], wait=True)

    def search(self, query: VectorQuery) -> list[VectorHit]:
        response = self._client.query_points(
            self._collection, query=_as_list(query.vector), limit=query.limit, query_filter=self._filter(query),
            with_payload=True if query.with_payload else ["memory_id"],
        )
        return [VectorHit(p.payload["memory_id"], float(p.score), p.payload) for p in response.points]

    def text_search(self, text: str, scope: Scope, limit: int) -> list[VectorHit] | None:
        """Not offered: keyword search goes to the graph's full-text index."""
        return None

    def search_many(self, queries: list[VectorQuery]) -> list[list[VectorHit]]:
        if not queries:
            return []
        requests = [
            self._models.QueryRequest(query=_as_list(q.vector), limit=q.limit, filter=self._filter(q),
                                      with_payload=True if q.with_payload else ["memory_id"])
            for q in queries
        ]
        responses = self._client.query_batch_points(self._collection, requests=requests)
        return [[VectorHit(p.payload["memory_id"], float(p.score), p.payload) for p in r.points] for r in responses]

    def count(self) -> int:
        return int(self._client.count(self._collection, exact=True).count)

    def scroll(self, offset: str | None, limit: int, with_vectors: bool = False,
               payload_fields: list[str] | None = None) -> tuple[list[VectorRecord], str | None]:
        records, next_offset = self._client.scroll(
            self._collection, limit=limit, offset=offset, with_payload=payload_fields or True, with_vectors=with_vectors
        )
        page = [stored_record(r.id, r.payload, r.vector if with_vectors else None) for r in records]
        return page, (str(next_offset) if next_offset is not None else None)

    def retrieve(self, memory_ids: list[str], with_vectors: bool = False,
                 payload_fields: list[str] | None = None) -> dict[str, VectorRecord]:
        if not memory_ids:
            return {}
        records = self._client.retrieve(
            self._collection, [point_id_for(m) for m in memory_ids], with_payload=payload_fields or True, with_vectors=with_vectors
        )
        found = (stored_record(r.id, r.payload, r.vector if with_vectors else None) for r in records)
        return {r.memory_id: r for r in found}

    def existing(self, memory_ids: list[str]) -> set[str]:
        by_point = {point_id_for(m): m for m in memory_ids}
        if not by_point:
            return set()
        records = self._client.retrieve(self._collection, list(by_point), with_payload=False, with_vectors=False)
        return {by_point[str(r.id)] for r in records}

    def set_payloads(self, payloads: dict[str, dict[str, Any]]) -> None:
        self._payload_batch(payloads, lambda body: self._models.SetPayloadOperation(set_payload=body))

    def replace_payloads(self, payloads: dict[str, dict[str, Any]]) -> None:
        self._payload_batch(payloads, lambda body: self._models.OverwritePayloadOperation(overwrite_payload=body))

    def _payload_batch(self, payloads: dict[str, dict[str, Any]], operation) -> None:
        """One request: ``operation`` of each point's payload."""
        if not payloads:
            return
        bodies = [self._models.SetPayload(payload=payload, points=[point_id_for(memory_id)])
                  for memory_id, payload in payloads.items()]
        self._client.batch_update_points(self._collection, [operation(body) for body in bodies], wait=True)

    def count_memories(self, excluded_types: frozenset[str] = frozenset()) -> int:
        m = self._models
        flt = None
        if excluded_types:
            flt = m.Filter(must_not=[m.FieldCondition(key="type", match=m.MatchAny(any=sorted(excluded_types)))])
        return int(self._client.count(self._collection, count_filter=flt, exact=True).count)

    def ping(self) -> bool:
        self._client.get_collections()
        return True

    def maintain(self) -> None:
        """The server optimises on its own."""

    def finish_build(self) -> None:
        """Nothing runs in the background here."""

    def persist(self) -> int:
        """The server flushes on its own."""
        return 0

    def close(self) -> None:
        self._client.close()

    def drop(self) -> None:
        if self._client.collection_exists(self._collection):
            self._client.delete_collection(self._collection)


class SerialisedClient:
    """A qdrant-client in local mode, one call at a time.

    Local mode keeps a collection in parallel Python lists and numpy arrays with no lock of
    its own (qdrant/qdrant-client#1193): a search that runs while another thread upserts can
    see them at different lengths and fail. The process that owns a local-mode store runs
    recalls and its vector workers on several threads, so every call goes through one lock.
    A real Qdrant server needs none of this.
    """

    def __init__(self, client) -> None:
        self._client = client
        self._lock = threading.RLock()

    def __getattr__(self, name: str):
        attribute = getattr(self._client, name)
        if not callable(attribute):
            return attribute

        def serialised(*args, **kwargs):
            with self._lock:
                return attribute(*args, **kwargs)

        return serialised
