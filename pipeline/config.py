"""Settings: read once from the environment into one typed object, validated at boot.

Names follow AutoMem's where AutoMem has one (``AUTOMEM_API_TOKEN``, ``FALKORDB_HOST``,
``QDRANT_URL``, ``SEARCH_WEIGHT_*``, ...), so an AutoMem deployment's environment carries
over. The fields, each with its default and a one-line description, are declared in groups
(pipeline/settings_groups.py); this module joins them, checks them together and derives the
values the rest of the code reads. docs/config.md is generated from the groups
(``python -m ops.config_table --write``).
"""

from __future__ import annotations

import ipaddress
import os
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from pipeline.errors import ConfigurationError
from pipeline.recall_profiles import RecallProfile, ScoringWeights
from pipeline.settings_groups import EMBEDDED_WORKER_PROCESSES_AUTO_MAX, GROUPS, SettingsGroup

__all__ = ["ContextBonuses", "RecallProfile", "ScoringWeights", "Settings", "SettingsGroup", "get_settings", "is_loopback"]

G = TypeVar("G", bound=SettingsGroup)


def is_loopback(host: str) -> bool:
    """True only for an interface no other machine can reach (127.0.0.0/8, ::1, localhost).

    Anything else, "0.0.0.0", "" and names included, counts as public: refusing a safe
    bind costs a token, accepting an exposed one leaks every memory.
    """
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    # A dual-stack socket sees IPv4 loopback as ::ffff:127.0.0.1.
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


class ContextBonuses(BaseModel, frozen=True):
    """Unweighted context bonuses added to final_score (see spec: Context Hint Parameters).

    Built by ``Settings.context_bonuses`` from the RECALL_*_BONUS settings, which hold the defaults."""

    tag: float
    type: float
    language: float
    language_style: float
    context: float
    priority: float


class Settings(BaseSettings, *GROUPS):
    """Every setting, read from the environment by its flat name (the groups only sort them)."""

    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=False)

    @classmethod
    def groups(cls) -> tuple[type[SettingsGroup], ...]:
        return GROUPS

    def group(self, group: type[G]) -> G:
        """One group's values as a model of its own (the values already validated here)."""
        return group.model_construct(**{name: getattr(self, name) for name in group.model_fields})

    @model_validator(mode="after")
    def _apply_recall_profile(self) -> "Settings":
        if self.recall_profile != "tuned":  # the field defaults are the tuned profile's
            for name, value in RecallProfile.named(self.recall_profile).settings().items():
                if name not in self.model_fields_set:  # an explicit setting wins
                    self.__dict__[name] = value  # plain store: no re-validation of the whole model
        return self

    @model_validator(mode="after")
    def _refuse_insecure_defaults(self) -> "Settings":
        if not is_loopback(self.host) and not self.automem_api_token:
            raise ConfigurationError(
                f"HOST={self.host} exposes the API beyond this machine: set AUTOMEM_API_TOKEN first."
            )
        if (self.classification_model or self.summary_model) and not (self.llm_api_key or self.openai_api_key):
            raise ConfigurationError(
                "CLASSIFICATION_MODEL/SUMMARY_MODEL need an API key: set LLM_API_KEY or OPENAI_API_KEY."
            )
        return self

    @model_validator(mode="after")
    def _check_maintenance_thresholds(self) -> "Settings":
        if self.consolidation_delete_threshold > self.consolidation_archive_threshold:
            raise ConfigurationError("CONSOLIDATION_DELETE_THRESHOLD must not exceed CONSOLIDATION_ARCHIVE_THRESHOLD")
        if self.consolidation_creative_min_similarity >= self.consolidation_creative_max_similarity:
            raise ConfigurationError("CONSOLIDATION_CREATIVE_MIN_SIMILARITY must be below CONSOLIDATION_CREATIVE_MAX_SIMILARITY")
        return self

    @model_validator(mode="after")
    def _check_wake_wait(self) -> "Settings":
        if self.queue_poll_ms * 4 > self.heartbeat_timeout_ms:
            # a consumer's fetch is its worker's heartbeat: a longer wait would get it presumed dead
            raise ConfigurationError("QUEUE_POLL_MS must be at most a quarter of HEARTBEAT_TIMEOUT_MS")
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
    def protected_types(self) -> frozenset[str]:
        return frozenset(t.strip() for t in self.consolidation_protected_types.split(",") if t.strip())

    @property
    def resolved_embedded_worker_processes(self) -> int:
        if self.embedded_worker_processes:
            return self.embedded_worker_processes
        return min(len(os.sched_getaffinity(0)), EMBEDDED_WORKER_PROCESSES_AUTO_MAX)

    @property
    def embedded_enricher_niceness(self) -> int:
        """The enricher's niceness under the launcher: the background's plus its own step, at most 19."""
        return min(19, self.embedded_background_nice + self.embedded_enricher_nice)

    @property
    def worker_process_cores(self) -> int:
        """The cores this machine gives each worker process: usable cores / WORKER_PROCESSES, at least 1."""
        return max(1, len(os.sched_getaffinity(0)) // self.worker_processes)

    @property
    def resolved_embed_model_passes(self) -> int:
        if self.embed_model_passes:
            return self.embed_model_passes
        # A thread count someone chose keeps the one-pass layout it was chosen for.
        return 1 if self.embed_torch_threads else self.worker_process_cores

    @property
    def resolved_embed_torch_threads(self) -> int:
        if self.embed_torch_threads:
            return self.embed_torch_threads
        return max(1, self.worker_process_cores // self.resolved_embed_model_passes)

    @property
    def resolved_embedding_provider(self) -> str:
        if self.embedding_provider != "auto":
            return self.embedding_provider
        return "openai" if self.openai_api_key else "local"

    @property
    def slack_noise_subtypes(self) -> frozenset[str]:
        return frozenset(t.strip() for t in self.slack_skip_subtypes.split(",") if t.strip())

    @property
    def scope_prefixes(self) -> tuple[str, ...]:
        return tuple(p.strip().lower() for p in self.scope_tag_prefixes.split(",") if p.strip())

    @property
    def enrichment_llm_key(self) -> str | None:
        return self.llm_api_key or self.openai_api_key

    @property
    def enrichment_llm_base_url(self) -> str | None:
        return self.llm_base_url or self.openai_base_url

    @property
    def resolved_summary_model(self) -> str | None:
        return self.summary_model or self.classification_model

    @property
    def uses_qdrant_edge(self) -> bool:
        return not self.qdrant_url

    @property
    def graph_content_fulltext(self) -> bool:
        """Whether keyword search reads the graph's full-text index on content: with a Qdrant
        server, or when told to. With Qdrant Edge the shard's own text index answers it, and
        the owner of the live shard settles the graph's field (``Services.settle_content_fulltext``)."""
        return not self.uses_qdrant_edge or self.recall_keyword_source == "graph"

    @property
    def edge_path(self) -> Path:
        return self.data_dir / "qdrant-edge" / self.qdrant_collection


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings, read from the environment once."""
    return Settings()
