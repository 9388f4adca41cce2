"""The clients a process needs, built once and passed in.

Each is built on first use (a worker that only persists never loads an embedding model) and
then shared by every thread of the process.
"""

from __future__ import annotations

import threading
from typing import Callable, TypeVar

import redis

from pipeline.config import Settings
from pipeline.embedding import Embedder, build_embedder, provider_dimensions
from pipeline.graph import GraphStore
from pipeline.observability.metrics import InstrumentedEmbedder, InstrumentedStore, PipelineMetrics, process_metrics
from pipeline.tracking import PipelineTracker
from pipeline.vectors import VectorStore, build_vector_store

T = TypeVar("T")


class Services:
    def __init__(
        self,
        settings: Settings,
        *,
        graph: GraphStore | None = None,
        vectors: VectorStore | None = None,
        embedder: Embedder | None = None,
        broker_redis: redis.Redis | None = None,
        metrics: Callable[[], PipelineMetrics] = process_metrics,
    ):
        self.settings = settings
        self._lock = threading.RLock()
        self._graph = graph
        self._vectors = vectors
        self._embedder = embedder
        self._redis = broker_redis
        self._tracker: PipelineTracker | None = None
        self._metrics = metrics  # resolved on first use (after process boot in a worker)
        self._entities = None
        self._chat = None
        self._enrichment_stats = None

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
        return self._embedder.dimensions if self._embedder else provider_dimensions(self.settings)

    @property
    def graph(self) -> GraphStore:
        def connect() -> GraphStore:
            store = GraphStore.connect(self.settings)
            store.ensure_schema()
            return InstrumentedStore(store, "graph", self._metrics())

        return self._lazy("_graph", connect)

    @property
    def vectors(self) -> VectorStore:
        def connect() -> VectorStore:
            store = build_vector_store(self.settings, self.vector_size)
            store.ensure_collection()
            return InstrumentedStore(store, "vectors", self._metrics())

        return self._lazy("_vectors", connect)

    @property
    def has_vectors(self) -> bool:
        return self._vectors is not None

    @property
    def embedder(self) -> Embedder:
        return self._lazy("_embedder", lambda: InstrumentedEmbedder(build_embedder(self.settings), self._metrics()))

    @property
    def broker_redis(self) -> redis.Redis:
        return self._lazy(
            "_redis",
            lambda: redis.Redis.from_url(self.settings.redis_url, socket_timeout=10, socket_connect_timeout=3),
        )

    @property
    def tracker(self) -> PipelineTracker:
        return self._lazy("_tracker", lambda: PipelineTracker(self.broker_redis))

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
