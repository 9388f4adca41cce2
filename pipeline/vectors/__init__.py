"""The vector index behind one protocol, with two backends.

- ``EdgeVectorStore``: Qdrant Edge in-process (the embedded default). A shard belongs to one
  process, so only the web process opens it.
- ``QdrantServerVectorStore``: a Qdrant server through ``qdrant-client`` (``QDRANT_URL``);
  ``:memory:`` selects qdrant-client's local mode, which tests use as the server stand-in.

FalkorDB is the record; everything here can be rebuilt from it by re-embedding.

The package, by job:

- ``store``: the protocol, the values it trades in (points, hits, queries), the filter both
  backends build, and a memory's payload;
- ``edge`` with ``edge_payload`` (the packed layout), ``edge_text`` (keyword search in the
  shard), ``edge_swap`` and ``edge_build`` (the index built by a child process on a copy, then
  swapped in), ``rw_guard`` (searches share the shard, the swap holds it alone), ``shard_lock``
  and ``edge_owner`` (one owner per shard, on the machine and across hosts);
- ``server``: the Qdrant server backend;
- ``registry`` (which collection is live, which one a dimension migration builds) and
  ``router`` (the store a process reads and writes through, across both).
"""

from __future__ import annotations

from typing import Callable

from pipeline.config import Settings
from pipeline.foreground import never_wait
from pipeline.vectors.edge import (
    EDGE_COVERED_FIELDS,
    EDGE_NATIVE_FIELDS,
    INDEX_BUILD_FAILED,
    INDEX_BUILD_FINISHED,
    INDEX_BUILD_STARTED,
    EdgeVectorStore,
    edge_packed_payload,
)
from pipeline.vectors.edge_swap import ChildBuildOptions
from pipeline.vectors.server import QdrantServerVectorStore
from pipeline.vectors.store import (
    ARCHIVED,
    FLOAT_INDEXES,
    KEYWORD_INDEXES,
    VectorHit,
    VectorPoint,
    VectorQuery,
    VectorRecord,
    VectorStore,
    archived_payload,
    is_excluded,
    payload_changed,
    plain_payload,
    vector_payload,
)

__all__ = [
    "ARCHIVED", "EDGE_COVERED_FIELDS", "EDGE_NATIVE_FIELDS", "FLOAT_INDEXES", "INDEX_BUILD_FAILED", "INDEX_BUILD_FINISHED",
    "INDEX_BUILD_STARTED", "KEYWORD_INDEXES", "EdgeVectorStore", "QdrantServerVectorStore", "VectorHit",
    "VectorPoint", "VectorQuery", "VectorRecord", "VectorStore", "archived_payload", "build_vector_store",
    "edge_packed_payload", "is_excluded", "payload_changed", "plain_payload", "vector_payload",
]


def build_vector_store(settings: Settings, vector_size: int, collection: str | None = None, client=None,
                       give_way: Callable[[], bool] = never_wait) -> VectorStore:
    """A store for ``collection`` (default ``QDRANT_COLLECTION``); server stores may share one ``client``.
    An Edge store calls ``give_way`` before each step of background work (pipeline.foreground)."""
    name = collection or settings.qdrant_collection
    if settings.uses_qdrant_edge:
        child_build = (ChildBuildOptions(nice=settings.embedded_background_nice, retry_s=settings.edge_build_retry_s)
                       if settings.edge_build_in_child else None)
        return EdgeVectorStore(
            str(settings.edge_path.parent / name), vector_size, settings.edge_optimize_min_changes,
            settings.edge_optimize_quiet_s, settings.edge_payload_memory, settings.edge_text_backfill,
            settings.edge_plain_max_points, give_way, child_build, settings.edge_optimize_min_share,
            vector_codes=settings.edge_vector_codes, codes_build_min_changes=settings.edge_codes_build_min_changes,
            vectors_on_disk=settings.edge_vectors_on_disk, payload_indexes_on_disk=settings.edge_payload_indexes_on_disk,
        )
    return QdrantServerVectorStore(client or QdrantServerVectorStore.client_for(settings), name, vector_size)


