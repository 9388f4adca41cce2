"""Recall: gather candidates (vector + full-text, or trending), score, rank, answer.

Read-only against the stores: the one write recall causes (``last_accessed``) is handed to
the maintenance queue by the caller-supplied ``on_access`` hook.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

from pipeline.config import Settings
from pipeline.embedding import Embedder
from pipeline.graph import GraphStore, TagFilter
from pipeline.query.keywords import extract_keywords, fulltext_terms
from pipeline.query.scoring import RecencyPolicy, final_score, score_components
from pipeline.vectors import VectorQuery, VectorStore

log = logging.getLogger(__name__)

# Payload/node fields that are storage bookkeeping, not part of the memory a client sees.
_INTERNAL_FIELDS = ("memory_id", "tags_lower", "timestamp_epoch", "updated_epoch", "type_source")


@dataclass(frozen=True)
class RecallRequest:
    query: str | None = None
    embedding: list[float] | None = None
    limit: int = 5
    tag_filter: TagFilter = field(default_factory=TagFilter)


@dataclass
class _Candidate:
    memory: dict[str, Any]
    match_type: str
    vector: float = 0.0


def public_memory(props: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in props.items() if k not in _INTERNAL_FIELDS and k != "id"}


class RecallEngine:
    def __init__(
        self,
        settings: Settings,
        graph: Callable[[], GraphStore],
        vectors: Callable[[], VectorStore],
        embedder: Callable[[], Embedder],
        on_access: Callable[[list[str]], None] | None = None,
    ):
        self._settings = settings
        self._graph = graph
        self._vectors = vectors
        self._embedder = embedder
        self._on_access = on_access
        self._weights = settings.scoring_weights
        self._recency = RecencyPolicy(settings.search_recency_window_days, settings.search_recency_curve)
        self._excluded = settings.excluded_types

    def _vector_fetch_size(self, limit: int) -> int:
        s = self._settings
        return max(limit, min(limit * s.recall_vector_overfetch, s.recall_vector_fetch_cap))

    def _vector_candidates(self, request: RecallRequest, status: dict[str, Any]) -> list[_Candidate]:
        vector = request.embedding
        if vector is None and request.query:
            vector = self._embedder().embed([request.query])[0]
        if vector is None:
            return []
        status["enabled"] = True
        try:
            hits = self._vectors().search(
                VectorQuery(vector, self._vector_fetch_size(request.limit), request.tag_filter, self._excluded)
            )
        except Exception:  # recall degrades to graph-only rather than failing
            log.exception("vector search failed; answering from the graph only")
            status["enabled"] = False
            return []
        status["matched"] = bool(hits)
        return [_Candidate({**h.payload, "id": h.memory_id}, "vector", h.score) for h in hits]

    def _keyword_candidates(self, request: RecallRequest, keywords: list[str]) -> list[_Candidate]:
        terms = fulltext_terms(keywords)
        if not terms:
            return []
        try:
            rows = self._graph().keyword_search(
                terms, request.tag_filter, self._excluded, self._vector_fetch_size(request.limit)
            )
        except Exception:
            log.exception("keyword search failed; answering from vectors only")
            return []
        return [_Candidate(memory, "keyword") for memory, _score in rows]

    def _trending(self, request: RecallRequest) -> list[_Candidate]:
        try:
            rows = self._graph().trending(request.tag_filter, self._excluded, request.limit)
        except Exception:
            log.exception("trending query failed")
            return []
        return [_Candidate(memory, "trending") for memory in rows]

    def recall(self, request: RecallRequest) -> dict[str, Any]:
        started = time.perf_counter()
        now = datetime.now(timezone.utc)
        keywords = extract_keywords(request.query)
        vector_status = {"enabled": False, "matched": False}
        has_query = bool(request.query and request.query.strip() and request.query.strip() != "*")

        if has_query or request.embedding is not None:
            query = request if has_query else RecallRequest(None, request.embedding, request.limit, request.tag_filter)
            candidates = self._vector_candidates(query, vector_status)
            seen = {c.memory["id"] for c in candidates}
            candidates += [c for c in self._keyword_candidates(request, keywords) if c.memory["id"] not in seen]
        else:
            candidates = self._trending(request)

        query_text = request.query if has_query else None
        scored = []
        for candidate in candidates:
            components = score_components(
                memory=candidate.memory,
                query=query_text,
                keywords=keywords,
                vector=candidate.vector,
                now=now,
                recency=self._recency,
            )
            scored.append((final_score(components, self._weights), candidate, components))
        # Highest score first; exact ties go newest first.
        scored.sort(key=lambda row: (row[0], row[1].memory.get("timestamp") or ""), reverse=True)
        top = scored[: request.limit]

        results = [
            {
                "id": candidate.memory["id"],
                "memory": public_memory(candidate.memory),
                "final_score": round(score, 6),
                "match_type": candidate.match_type,
                "score_components": {k: round(v, 6) if isinstance(v, float) else v for k, v in components.items()},
                "relations": [],
            }
            for score, candidate, components in top
        ]
        if results and self._on_access:
            try:
                self._on_access([r["id"] for r in results])
            except Exception:  # access tracking must never fail a recall
                log.exception("could not enqueue last_accessed update")

        tf = request.tag_filter
        response: dict[str, Any] = {
            "status": "success",
            "query": request.query,
            "results": results,
            "count": len(results),
            "dedup_removed": 0,
            "sort": "score",
            "state_mode": "current",
            "keywords": keywords,
            "vector_search": vector_status,
            "tags": list(tf.tags),
            "tag_mode": tf.mode,
            "tag_match": tf.match,
        }
        if tf.active:
            response["tag_scope"] = {
                "filtered": True,
                "pool_size_hint": sum(1 for c in candidates if c.match_type == "vector") if vector_status["enabled"] else None,
                "gated_low_evidence": 0,
            }
        response["query_time_ms"] = round((time.perf_counter() - started) * 1000, 2)
        return response
