"""The clients a process needs, built once and passed in.

Each is built on first use (a worker that only persists never loads an embedding model) and
then shared by every thread of the process.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, TypeVar

import redis

from pipeline.config import Settings
from pipeline.embedding import Embedder, build_embedder
from pipeline.enrichment.entities import EntityExtractor
from pipeline.graph import GraphStore
from pipeline.observability.metrics import InstrumentedEmbedder, InstrumentedStore, PipelineMetrics, process_metrics
from pipeline.tracking import PipelineTracker
from pipeline.foreground import never_wait
from pipeline.vectors import QdrantServerVectorStore, VectorStore, build_vector_store
from pipeline.vectors.registry import CollectionRegistry, CollectionSpec

T = TypeVar("T")
log = logging.getLogger("mempipe.services")
CONTENT_FULLTEXT_UNSETTLED = "graph content full-text index not settled"


class Services:
    def __init__(
        self,
        settings: Settings,
        *,
        graph: GraphStore | None = None,
        vectors: VectorStore | None = None,
        embedder: Embedder | None = None,
        broker_redis: redis.Redis | None = None,
        entities: EntityExtractor | None = None,
        metrics: Callable[[], PipelineMetrics] = process_metrics,
        give_way: Callable[[], bool] = never_wait,
    ):
        self.settings = settings
        # What this process's stores call before a step of background work (pipeline.foreground):
        # the web's recalls in flight; nothing elsewhere.
        self._give_way = give_way
        self._lock = threading.RLock()
        self._graph = graph
        self._vectors = vectors
        self._embedder = embedder
        self._redis = broker_redis
        self._tracker: PipelineTracker | None = None
        self._metrics = metrics  # resolved on first use (after process boot in a worker)
        self._entities = entities
        self._chat = None
        self._enrichment_stats = None
        self._collections: CollectionRegistry | None = None
        self._router = None
        self._stores: dict[str, VectorStore] = {}  # opened collections, by name
        self._specs: dict[str, CollectionSpec] = {}  # what each opened collection was built with
        self._owners: dict[str, Any] = {}  # Edge collections' owner records in the broker (pipeline.vectors.edge_owner)
        self._embedders: dict[tuple, Embedder] = {}
        self._qdrant_client = None  # one per process in server mode, shared by its collections

    def _lazy(self, name: str, factory: Callable[[], T]) -> T:
        value = getattr(self, name)
        if value is None:
            with self._lock:
                value = getattr(self, name)
                if value is None:
                    value = factory()
                    setattr(self, name, value)
        return value

    @property
    def vector_size(self) -> int:
        """The live collection's dimensions (what recall embeds queries at)."""
        return self._embedder.dimensions if self._embedder else self.collections.state().live.dims

    @property
    def graph(self) -> GraphStore:
        def connect() -> GraphStore:
            store = GraphStore.connect(self.settings)
            store.ensure_schema(content_fulltext=self.settings.graph_content_fulltext)
            return InstrumentedStore(store, "graph", self._metrics())

        return self._lazy("_graph", connect)

    @property
    def collections(self) -> CollectionRegistry:
        """Which collection is live (and which a migration builds), agreed through Redis."""
        return self._lazy("_collections", lambda: CollectionRegistry(self.broker_redis, self.settings))

    @property
    def vectors(self) -> VectorStore:
        """The live collection for reads; writes fan out to a migration's target (see VectorRouter)."""
        if self._vectors is not None:  # handed in (tests): one store, no registry
            return self._vectors
        from pipeline.vectors.router import VectorRouter

        router = self._lazy("_router", lambda: VectorRouter(self))
        router.live()  # open it now: a store that cannot open fails here, on first use
        return router

    def vector_store(self, spec: CollectionSpec) -> VectorStore:
        """The store of one collection, opened (and its collection ensured) once per process."""
        store = self._stores.get(spec.name)
        if store is None:
            with self._lock:
                store = self._stores.get(spec.name)
                if store is None:
                    raw = build_vector_store(self.settings, spec.dims, spec.name, self._server_client(), self._give_way)
                    raw.ensure_collection()
                    if self.settings.uses_qdrant_edge:
                        self._claim_edge(spec.name, raw)
                    store = self._stores[spec.name] = InstrumentedStore(raw, "vectors", self._metrics())
                    self._specs[spec.name] = spec
        return store

    def open_spec_of_size(self, dims: int) -> CollectionSpec | None:
        """An opened collection whose vectors have ``dims`` dimensions (the newest opened first)."""
        return next((spec for spec in reversed(list(self._specs.values())) if spec.dims == dims), None)

    def _claim_edge(self, name: str, raw: VectorStore) -> None:
        """Announce this process as the collection's owner; a live owner elsewhere refuses it."""
        from pipeline.vectors.edge_owner import OwnerRecord

        record = OwnerRecord(self.broker_redis, name, str(self.settings.edge_path.parent / name))
        try:
            record.claim()
        except BaseException:
            raw.close()  # gives the shard's file lock back
            raise
        self._owners[name] = record

    def settle_content_fulltext(self) -> None:
        """Keep the graph's content full-text index only while keyword search needs it.

        The live Edge collection's shard answers keyword search once its text index holds
        every point (``text_ready``); a shard written before that index (and not yet repacked)
        leaves it to the graph. Only the shard's owner knows which: a process that has not
        opened the live collection does nothing. Call it once the graph answers (the web,
        after its start-up wait for the graph).
        """
        if not self.settings.uses_qdrant_edge or not self._stores:
            return  # a Qdrant server (ensure_schema gave the graph the field), or no shard opened here
        wanted = None
        try:
            live = self._stores.get(self.collections.state().live.name)
            if live is None:
                return
            wanted = self.settings.graph_content_fulltext or not live.text_ready
            self.graph.set_content_fulltext(wanted)
        except Exception as exc:  # the index stays as it was; the next start settles it
            log.warning(CONTENT_FULLTEXT_UNSETTLED, extra={"wanted": wanted, "error": str(exc)})

    def _release_edge(self, name: str) -> None:
        record = self._owners.pop(name, None)
        if record is not None:
            record.release()

    def _server_client(self):
        """One qdrant-client shared by every collection's store; None with Qdrant Edge."""
        if self.settings.uses_qdrant_edge:
            return None
        return self._lazy("_qdrant_client", lambda: QdrantServerVectorStore.client_for(self.settings))

    def open_vector_stores(self) -> list[VectorStore]:
        return list(self._stores.values())

    def drop_vector_store(self, spec: CollectionSpec) -> None:
        """Delete a collection (a migration's old or abandoned one), open here or not."""
        with self._lock:
            store = self._stores.pop(spec.name, None)
            self._specs.pop(spec.name, None)
            self._release_edge(spec.name)
            if store is None:
                store = build_vector_store(self.settings, spec.dims, spec.name, self._server_client())
            store.drop()

    def close_vector_stores(self) -> None:
        with self._lock:
            stores, self._stores = list(self._stores.values()), {}
            self._specs.clear()
            for store in stores:
                if self.settings.uses_qdrant_edge:
                    store.close()
            for name in list(self._owners):
                self._release_edge(name)
            if self._qdrant_client is not None:
                self._qdrant_client.close()
                self._qdrant_client = None

    @property
    def has_vectors(self) -> bool:
        return self._vectors is not None or bool(self._stores)

    def embedder_for(self, spec: CollectionSpec) -> Embedder:
        """The embedder a collection was built with (built once per process)."""
        key = (spec.provider, spec.model, spec.dims)
        embedder = self._embedders.get(key)
        if embedder is None:
            with self._lock:
                embedder = self._embedders.get(key)
                if embedder is None:
                    built = build_embedder(spec.embedding_settings(self.settings))
                    embedder = self._embedders[key] = InstrumentedEmbedder(built, self._metrics())
        return embedder

    @property
    def embedder(self) -> Embedder:
        """The live collection's embedder: queries must be embedded like what they search."""
        if self._embedder is not None:  # handed in (tests)
            return self._embedder
        return self.embedder_for(self.collections.state().live)

    @property
    def broker_redis(self) -> redis.Redis:
        return self._lazy(
            "_redis",
            lambda: redis.Redis.from_url(self.settings.redis_url, socket_timeout=10, socket_connect_timeout=3),
        )

    def give_way(self) -> bool:
        """Before a step of background work: wait (bounded) while this process answers
        recalls or ``/health`` (pipeline.foreground). True when it waited; never elsewhere."""
        return self._give_way()

    @property
    def tracker(self) -> PipelineTracker:
        return self._lazy("_tracker", lambda: PipelineTracker(self.broker_redis, self.settings.similar_to_defer_quiet_ms))

    # --- enrichment ------------------------------------------------------------------
    @property
    def entity_extractor(self):
        from pipeline.enrichment.entities import build_entity_extractor

        s = self.settings
        return self._lazy("_entities", lambda: build_entity_extractor(s.entity_extractor, s.spacy_model))

    @property
    def chat(self):
        """The enrichment LLM (rate-limited, retried), or None when no model is configured."""
        s = self.settings
        if not (s.classification_model or s.summary_model):
            return None

        def build():
            from pipeline.enrichment.llm import ChatJSON, build_chat_client, build_rate_gate

            client = build_chat_client(s.enrichment_llm_key, s.enrichment_llm_base_url, s.llm_timeout_s)
            gate = build_rate_gate(self.broker_redis, s.llm_rate_limit, s.llm_rate_window_s, s.llm_rate_wait_s)
            return ChatJSON(client, gate, s.llm_max_attempts)

        return self._lazy("_chat", build)

    @property
    def enrichment_stats(self):
        from pipeline.enrichment.stats import EnrichmentStats

        return self._lazy("_enrichment_stats", lambda: EnrichmentStats(self.broker_redis))

    def close(self) -> None:
        if self._vectors is not None:
            self._vectors.close()
        self.close_vector_stores()
