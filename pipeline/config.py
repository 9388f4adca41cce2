"""Settings: read once from the environment into one typed object.

Names follow AutoMem's where AutoMem has one (``AUTOMEM_API_TOKEN``, ``FALKORDB_HOST``,
``QDRANT_URL``, ``SEARCH_WEIGHT_*``, ...), so an AutoMem deployment's environment carries
over. Every tunable lives here with its default and a one-line description; the README's
configuration table is generated from this class (``python -m ops.config_table``).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from pipeline.errors import ConfigurationError

EmbeddingProviderName = Literal["auto", "openai", "local", "hash"]


class ScoringWeights(BaseModel, frozen=True):
    """Weights of the hybrid recall score (see spec: recall-operations, Hybrid Scoring)."""

    vector: float = 0.35
    keyword: float = 0.35
    metadata: float = 0.35
    exact: float = 0.20
    importance: float = 0.10
    confidence: float = 0.05
    recency: float = 0.10
    tag: float = 0.20
    relation: float = 0.25
    relevance: float = 0.0
    temporal: float = 0.10


class ContextBonuses(BaseModel, frozen=True):
    """Unweighted context bonuses added to final_score (see spec: Context Hint Parameters)."""

    tag: float = 0.2
    type: float = 0.2
    language: float = 0.15
    language_style: float = 0.1
    context: float = 0.1
    priority: float = 0.9


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=False)

    # --- API -------------------------------------------------------------------------
    automem_api_token: str | None = Field(None, description="Token clients send (Bearer, X-API-Key or ?api_key=).")
    admin_api_token: str | None = Field(None, description="Extra token admin routes require (X-Admin-Token).")
    host: str = Field("127.0.0.1", description="Interface the web process binds to.")
    port: int = Field(8001, description="Port the web process listens on.")
    write_wait_seconds: float = Field(2.0, ge=0, le=30, description="How long a single write waits to become recallable before answering 202.")
    max_request_bytes: int = Field(1_048_576, description="Largest request body accepted (413 above).")
    memory_content_hard_limit: int = Field(8000, description="Longest memory content accepted, in characters (400 above).")
    max_tags: int = Field(64, description="Most tags one memory may carry.")
    max_tag_length: int = Field(256, description="Longest tag accepted, in characters.")
    max_metadata_bytes: int = Field(65_536, description="Largest metadata object accepted, JSON-encoded.")
    max_metadata_depth: int = Field(8, description="Deepest nesting accepted in metadata.")

    # --- Stores ----------------------------------------------------------------------
    redis_url: str = Field("redis://127.0.0.1:16379/0", description="Queue broker (Redis). Separate from the graph server.")
    falkordb_host: str = Field("127.0.0.1", description="FalkorDB host (the graph, canonical record).")
    falkordb_port: int = Field(16380, description="FalkorDB port.")
    falkordb_password: str | None = Field(None, description="FalkorDB password.")
    falkordb_graph: str = Field("memories", description="Graph name inside FalkorDB.")
    qdrant_url: str | None = Field(None, description="Qdrant server URL; unset = embedded Qdrant Edge. ':memory:' = qdrant-client local mode (tests only).")
    qdrant_api_key: str | None = Field(None, description="Qdrant server API key.")
    qdrant_collection: str = Field("memories", description="Qdrant collection name.")
    vector_size: int | None = Field(None, ge=1, le=8192, description="Embedding dimensions; default: the provider's native size.")
    data_dir: Path = Field(Path("data"), alias="MEMPIPE_DATA_DIR", description="Where the embedded default keeps redis data, AOF files and the Edge shard.")
    embedded: bool = Field(False, alias="MEMPIPE_EMBEDDED", description="Set by the one-command launcher: child stores, generated tokens.")

    # --- Embeddings ------------------------------------------------------------------
    embedding_provider: EmbeddingProviderName = Field("auto", description="openai, local (MiniLM, offline), hash (tests/benchmarks only) or auto (openai when a key is set, else local).")
    embedding_model: str | None = Field(None, description="Model name for the openai provider (default text-embedding-3-small).")
    openai_api_key: str | None = Field(None, description="OpenAI (or compatible) API key.")
    openai_base_url: str | None = Field(None, description="OpenAI-compatible endpoint.")
    embed_batch_size: int = Field(64, ge=1, le=2048, description="Most texts sent to the provider in one call.")

    # --- Pipeline (Dramatiq) ---------------------------------------------------------
    worker_processes: int = Field(1, ge=1, description="Worker processes the launcher starts.")
    worker_threads: int = Field(4, ge=1, description="Threads per worker process.")
    actor_max_retries: int = Field(12, ge=0, description="Retries of a failing stage before its message goes to the dead-letter queue.")
    retry_min_backoff_ms: int = Field(250, ge=1, description="First retry delay; doubles each retry.")
    retry_max_backoff_ms: int = Field(60_000, ge=1, description="Longest retry delay.")
    queue_poll_ms: int = Field(10, ge=1, le=5000, description="Longest idle poll interval of hot queues (bounds accepted→recallable latency).")
    heartbeat_timeout_ms: int = Field(15_000, ge=1000, description="Silence after which a worker is presumed dead and its messages redelivered.")
    dead_message_ttl_days: int = Field(3650, ge=1, description="How long dead-lettered messages are kept for inspection and replay.")
    web_worker_queues: str | None = Field(None, description="Queues the web process consumes itself (comma list, 'all', 'none'); default: the vector queue with Qdrant Edge, none with a Qdrant server.")
    edge_optimize_interval_s: float = Field(30.0, gt=0, description="How often the web process considers rebuilding the Edge index (off the request path).")
    edge_optimize_min_changes: int = Field(500, ge=1, description="Vector writes since the last optimize that trigger another.")

    # --- Recall ----------------------------------------------------------------------
    recall_max_limit: int = Field(100, ge=1, description="Largest limit a recall may ask for (larger is clamped).")
    recall_default_limit: int = Field(5, ge=1, description="Results when limit is not given.")
    recall_vector_overfetch: int = Field(4, ge=1, description="Vector candidates fetched per requested result.")
    recall_vector_fetch_cap: int = Field(200, ge=1, description="Upper bound on vector candidates fetched.")
    recall_excluded_types: str = Field("MetaPattern", description="Memory types never returned by recall (comma list).")
    recall_keyword_search: Literal["fill", "always"] = Field("fill", description="fill: full-text search only fills slots vector search left open (the spec's sequential search); always: run it on every text query.")
    recall_metadata_search_enabled: bool = Field(True, description="Admit candidates whose metadata values match the query (the metadata sidecar).")
    recall_metadata_min_match: float = Field(0.5, ge=0, le=1, description="Share of query keywords the metadata must contain for the sidecar to admit a memory.")
    recall_relation_limit: int = Field(5, ge=1, le=200, description="Default relations followed per seed (relation_limit).")
    recall_expansion_limit: int = Field(25, ge=1, le=500, description="Default cap on expanded memories (expansion_limit).")
    recall_entity_search_limit: int = Field(5, ge=1, le=20, description="Entities searched by expand_entities (up to this many, each up to 5 memories).")
    recall_min_score: float = Field(0.0, ge=0, description="Default min_score: results below this final score are dropped (0 = off).")
    recall_adaptive_floor: bool = Field(True, description="Default adaptive_floor: drop weak outliers relative to the best result.")
    recall_adaptive_floor_ratio: float = Field(0.3, ge=0, le=1, description="Adaptive floor = best final_score × this ratio (text queries only).")
    recall_relevance_gate: float = Field(0.0, ge=0, le=1, description="In tag-scoped text recall, ramp importance/confidence/recency/tag down for results whose evidence is below this (0 = off).")
    recall_recency_bias: Literal["off", "on", "auto"] = Field("off", description="Default recency_bias re-rank mode.")
    recall_context_tag_bonus: float = Field(0.2, description="Context bonus when a memory carries a context_tags tag.")
    recall_context_type_bonus: float = Field(0.2, description="Context bonus when a memory's type is in context_types.")
    recall_context_language_bonus: float = Field(0.15, description="Context bonus when a memory matches the language (or active_path's language).")
    recall_context_style_bonus: float = Field(0.1, description="Extra bonus for a Style memory matching the language.")
    recall_context_label_bonus: float = Field(0.1, description="Context bonus when the context label names a memory's tag or type.")
    recall_priority_bonus: float = Field(0.9, description="Context bonus for a memory listed in priority_ids.")
    recall_entity_expansion_score: float = Field(0.15, ge=0, description="Score (entity_expansion component) of an entity-expanded result.")
    search_recency_window_days: float = Field(180.0, gt=0, description="Recency window (linear) or half-life (exp), in days.")
    search_recency_curve: Literal["linear", "exp"] = Field("linear", description="Recency decay curve.")
    search_weight_vector: float = Field(0.35, description="Weight of vector similarity.")
    search_weight_keyword: float = Field(0.35, description="Weight of keyword match.")
    search_weight_metadata: float = Field(0.35, description="Weight of the metadata sidecar match.")
    search_weight_exact: float = Field(0.20, description="Weight of a whole-query exact match.")
    search_weight_importance: float = Field(0.10, description="Weight of importance.")
    search_weight_confidence: float = Field(0.05, description="Weight of confidence.")
    search_weight_recency: float = Field(0.10, description="Weight of recency.")
    search_weight_tag: float = Field(0.20, description="Weight of query-keyword/tag overlap.")
    search_weight_relation: float = Field(0.25, description="Weight of graph relations.")
    search_weight_relevance: float = Field(0.0, description="Weight of the consolidation relevance score.")
    search_weight_temporal: float = Field(0.10, description="Weight of the relative-recency re-rank.")

    # --- Clock -----------------------------------------------------------------------
    clock_tick_seconds: float = Field(60.0, gt=0, description="How often the clock wakes to enqueue due jobs.")

    @model_validator(mode="after")
    def _refuse_insecure_defaults(self) -> "Settings":
        exposed = self.host not in ("127.0.0.1", "localhost", "::1")
        if exposed and not self.automem_api_token:
            raise ConfigurationError(
                f"HOST={self.host} exposes the API beyond this machine: set AUTOMEM_API_TOKEN first."
            )
        return self

    # --- Derived views ---------------------------------------------------------------
    @property
    def scoring_weights(self) -> ScoringWeights:
        return ScoringWeights(
            **{name: getattr(self, f"search_weight_{name}") for name in ScoringWeights.model_fields}
        )

    @property
    def context_bonuses(self) -> ContextBonuses:
        return ContextBonuses(
            tag=self.recall_context_tag_bonus,
            type=self.recall_context_type_bonus,
            language=self.recall_context_language_bonus,
            language_style=self.recall_context_style_bonus,
            context=self.recall_context_label_bonus,
            priority=self.recall_priority_bonus,
        )

    @property
    def excluded_types(self) -> frozenset[str]:
        return frozenset(t.strip() for t in self.recall_excluded_types.split(",") if t.strip())

    @property
    def resolved_embedding_provider(self) -> str:
        if self.embedding_provider != "auto":
            return self.embedding_provider
        return "openai" if self.openai_api_key else "local"

    @property
    def uses_qdrant_edge(self) -> bool:
        return not self.qdrant_url

    @property
    def edge_path(self) -> Path:
        return self.data_dir / "qdrant-edge" / self.qdrant_collection


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings, read from the environment once."""
    return Settings()
