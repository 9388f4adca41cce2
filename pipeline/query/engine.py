"""Recall: the engine that turns a validated request into the response AutoMem clients read.

Read-only against the stores: the one write recall causes (``last_accessed`` of the seeds)
is handed to the maintenance queue by the caller-supplied ``on_access`` hook.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timezone
from typing import Any, Callable

from pipeline.config import Settings
from pipeline.embedding import Embedder
from pipeline.graph import GraphStore, Scope
from pipeline.query.adapter import adapter_for
from pipeline.query.beside import Beside
from pipeline.query.candidates import Candidate, CandidateSources
from pipeline.query.context import ContextProfile
from pipeline.query.decompose import decompose
from pipeline.query.dedup import collapse_duplicates
from pipeline.query.expansion import expand_entities, expand_relations
from pipeline.query.filters import matches_tags
from pipeline.query.entities import named_entities
from pipeline.query.graph_reads import contradictions, neighbours
from pipeline.query.keywords import extract_keywords
from pipeline.query.request import RecallRequest
from pipeline.query.response import Scored, result_entry
from pipeline.query.scoring import has_temporal_intent, relative_recency
from pipeline.query.state import contradiction_details
from pipeline.query.search import QuerySearch, SearchContext, SearchPolicy, order_rows, time_key
from pipeline.query.timewindow import TimeWindow, parse_time_query
from pipeline.vectors import VectorStore

log = logging.getLogger(__name__)


class RecallEngine:
    def __init__(
        self,
        settings: Settings,
        graph: Callable[[], GraphStore],
        vectors: Callable[[], VectorStore],
        embedder: Callable[[], Embedder],
        on_access: Callable[[list[str]], None] | None = None,
        dimensions: Callable[[], int] | None = None,
        beside: Beside | None = None,
    ):
        self._settings = settings
        adapter = adapter_for(settings)
        self._sources = CandidateSources(graph, vectors, embedder, dimensions or (lambda: embedder().dimensions),
                                         adapter.apply if adapter else None)
        self._policy = SearchPolicy.from_settings(settings)
        # A pool passed in is its caller's to close; one built here is closed by close().
        self._own_beside: Beside | None = None
        if beside is None:
            beside = self._own_beside = Beside(settings.recall_graph_reads_beside)
        self._search = QuerySearch(self._sources, self._policy, beside)
        self._bonuses = settings.context_bonuses
        self._on_access = on_access

    def close(self) -> None:
        """Stop the threads that run graph reads beside a recall, if this engine started them."""
        if self._own_beside is not None:
            self._own_beside.close()

    # --- request → plan ---------------------------------------------------------------
    @staticmethod
    def time_window(request: RecallRequest, now: datetime) -> TimeWindow | None:
        """Explicit start/end override the natural-language expression, bound by bound."""
        parsed = parse_time_query(request.time_query, now) if request.time_query else None
        if request.start is None and request.end is None:
            return parsed
        return TimeWindow(request.start or (parsed.start if parsed and request.end is None else None),
                          request.end or (parsed.end if parsed and request.start is None else None))

    def _scope(self, request: RecallRequest, window: TimeWindow | None) -> Scope:
        return Scope(
            tags=request.tag_filter,
            exclude_tags=request.exclude_tags,
            start_epoch=window.start.timestamp() if window and window.start else None,
            end_epoch=window.end.timestamp() if window and window.end else None,
            excluded_types=self._settings.excluded_types,
        )

    @staticmethod
    def _queries(request: RecallRequest) -> list[str | None]:
        if request.queries:
            return list(dict.fromkeys(request.queries))
        if request.auto_decompose and request.has_text:
            return decompose(request.query)
        return [request.query]

    @staticmethod
    def _widens(request: RecallRequest, queries: list[str | None]) -> bool:
        """Decomposed (not explicit) queries are merged by widening the question's pool.

        The spec fixes the merge of explicit ``queries[]`` (best-scored version of each memory),
        not of ``auto_decompose``'s supplementary searches, whose first query is the question.
        """
        return len(queries) > 1 and not request.queries and request.auto_decompose

    # --- recall -----------------------------------------------------------------------
    def recall(self, request: RecallRequest) -> dict[str, Any]:
        started = time.perf_counter()
        now = datetime.now(timezone.utc)
        window = self.time_window(request, now)
        sort = request.sort or ("time_desc" if window and not request.has_text and not request.queries else "score")
        ctx = SearchContext(self._scope(request, window), ContextProfile.build(request.context, self._bonuses), now,
                            current_only=request.state_mode == "current")
        queries = self._queries(request)
        multi = len(queries) > 1
        per_query = request.per_query_limit or request.limit

        if self._widens(request, queries):
            rows, fetched_priority, dedup_removed = self._search.run_widened(
                request.for_query(queries[0], request.limit), ctx, sort, queries[1:], per_query)
        else:
            rows, fetched_priority, dedup_removed = self._merge_by_score(request, ctx, sort, queries, per_query)
        order_rows(rows, sort)
        rows, folded = collapse_duplicates(rows)
        dedup_removed += folded

        recency_active = self._recency_active(request, sort, rows)
        if recency_active:
            self._rerank_by_recency(rows)
        rows, score_filter = self._score_floor(request, rows)
        rows = self._place_priority(rows, ctx.profile.priority_ids)
        seeds = rows[: request.limit]
        anchor = self._anchor(seeds, rows, ctx.profile, request.limit)
        fallback_used = False
        if request.scope_fallback and ctx.scope.tags.active and request.has_text and len(seeds) < request.limit:
            seeds += self._fallback(request, ctx, seeds, sort, score_filter)
            fallback_used = True

        response = self._respond(request, ctx, seeds, sort, queries, multi, dedup_removed)
        self._expand_and_hydrate(request, ctx, seeds, response)
        response["results"] = [result_entry(r) for r in seeds] + response.pop("_expanded")
        response["count"] = len(response["results"])
        self._diagnose(request, ctx, queries, response)
        if recency_active:
            response["recency_bias"] = "on"
        if fallback_used:
            response["scope_fallback"] = True
        if score_filter:
            response["score_filter"] = score_filter
        if ctx.profile.active:
            response["context_priority"] = ctx.profile.describe(fetched_priority, anchor)
        if window:
            response["time_window"] = window.as_dict()
        self._record_access([r.id for r in seeds])  # seeds only, never expanded memories
        response["query_time_ms"] = round((time.perf_counter() - started) * 1000, 2)
        return response

    def _merge_by_score(self, request: RecallRequest, ctx: SearchContext, sort: str, queries: list[str | None],
                        per_query: int) -> tuple[list[Scored], int, int]:
        """Each query scored on its own, up to ``per_query`` rows each, the best-scored version of
        a memory kept (the spec's merge for ``queries[]``). Rows, priority ids fetched, duplicates."""
        multi = len(queries) > 1
        pool: dict[str, Scored] = {}
        dedup_removed = fetched_priority = 0
        for text in queries:
            rows, fetched = self._search.run(request.for_query(text, per_query if multi else request.limit), ctx, sort)
            fetched_priority += fetched
            for row in rows[:per_query] if multi else rows:
                kept = pool.get(row.id)
                if kept is None:
                    pool[row.id] = row
                else:  # keep the best-scored version of a memory found by several queries
                    dedup_removed += 1
                    if row.score > kept.score:
                        pool[row.id] = row
        return list(pool.values()), fetched_priority, dedup_removed

    # --- ranking controls ---------------------------------------------------------------
    def _recency_active(self, request: RecallRequest, sort: str, rows: list[Scored]) -> bool:
        if sort != "score" or not rows or request.recency_bias == "off":
            return False
        return request.recency_bias == "on" or any(has_temporal_intent(q) for q in [request.query, *request.queries])

    def _rerank_by_recency(self, rows: list[Scored]) -> None:
        weight = self._policy.weights.temporal
        relative = relative_recency([time_key(r.candidate.memory) if time_key(r.candidate.memory) != float("-inf") else None for r in rows])
        if relative is None or weight == 0:
            return  # echo the mode, change nothing: no spread or no weight
        for row, value in zip(rows, relative):
            row.original_score = row.score
            row.components["temporal"] = value
            row.score += weight * value
        order_rows(rows, "score")

    def _score_floor(self, request: RecallRequest, rows: list[Scored]) -> tuple[list[Scored], dict[str, Any] | None]:
        floor = request.min_score
        adaptive = None
        if request.adaptive_floor and request.has_text and len(rows) >= 3:
            best = max(r.score for r in rows)
            adaptive = best * self._settings.recall_adaptive_floor_ratio
            floor = max(floor, adaptive)
        if floor <= 0:
            return rows, None
        kept = [r for r in rows if r.score >= floor]
        return kept, {
            "min_score": request.min_score,
            "adaptive_floor": request.adaptive_floor,
            "floor": round(floor, 6),
            "filtered_count": len(rows) - len(kept),
        }

    @staticmethod
    def _place_priority(rows: list[Scored], priority_ids: tuple[str, ...]) -> list[Scored]:
        if not priority_ids:
            return rows
        wanted = set(priority_ids)
        return [r for r in rows if r.id in wanted] + [r for r in rows if r.id not in wanted]

    @staticmethod
    def _anchor(seeds: list[Scored], pool: list[Scored], profile: ContextProfile, limit: int) -> str | None:
        """Guarantee one memory that fits the context hints when the pool has one."""
        if not (profile.types or profile.tags or profile.language) or not seeds:
            return None
        if any(profile.fits(r.candidate.memory) for r in seeds):
            return None
        for row in pool[limit:]:
            if profile.fits(row.candidate.memory):
                seeds[-1] = row
                return row.id
        return None

    def _fallback(self, request, ctx: SearchContext, seeds: list[Scored], sort: str, score_filter) -> list[Scored]:
        """Fill a short tag-scoped answer from an unscoped vector search (outside_tag_scope)."""
        vector = ctx.query_vectors.get(request.query.strip()) if request.query else None
        if vector is None:
            return []
        room = request.limit - len(seeds)
        hits = self._sources.vector(vector, ctx.scope.without_tags(), self._policy.fetch_size(request.limit, False),
                                    ctx.vector_status, request.query.strip())
        shown = {r.id for r in seeds}
        fills = [c for c in hits if c.id not in shown and not matches_tags(c.memory, ctx.scope.tags)]
        fills = self._search.apply_state(fills, ctx)
        for candidate in fills:
            candidate.outside_tag_scope = True
        self._sources.add_relevance(fills)
        keywords = extract_keywords(request.query)
        rows = self._search.score(fills, ctx, request.query.strip(), keywords, gate=False)
        order_rows(rows, sort)
        floor = score_filter["floor"] if score_filter else request.min_score
        return [r for r in rows if r.score >= floor][:room]

    # --- expansion and hydration ---------------------------------------------------------
    def _expand_and_hydrate(self, request: RecallRequest, ctx: SearchContext, seeds: list[Scored], response: dict) -> None:
        options = request.expansion
        seen = {r.id for r in seeds}
        expanded: list[Candidate] = []
        edges = None
        if options.relations and seeds:
            outcome = expand_relations(self._sources, [r.candidate for r in seeds], options, ctx.scope, seen, ctx.admissible)
            expanded = self._search.apply_state(outcome.expanded, ctx, replace=False)
            edges = None if outcome.failed else outcome.edges
            response["expansion"] = {
                "enabled": True, "seed_count": len(seeds), "expanded_count": len(expanded),
                "relation_limit": options.relation_limit, "expansion_limit": options.expansion_limit,
                "respect_tags": options.respect_tags,
            }
        if options.entities:
            vector = ctx.query_vectors.get(request.query.strip() if request.has_text else None, request.embedding)
            outcome = expand_entities(
                self._sources, [r.candidate for r in seeds] + expanded, vector, options, ctx.scope, seen, ctx.admissible,
                self._settings.recall_entity_search_limit,
            )
            entity_rows = self._search.apply_state(outcome.expanded, ctx, replace=False)
            response["entity_expansion"] = {
                "enabled": True, "expanded_count": len(entity_rows), "entities_found": outcome.entities_found,
            }
            expanded += entity_rows
        if edges is None:  # deferred hydration: only the seeds that survived trimming
            edges = self._hydrate([r.id for r in seeds if r.candidate.match_type != "state_replacement"],
                                  options.relation_limit)
        for row in seeds:
            row.candidate.relations = row.candidate.relations + [e.stub() for e in edges.get(row.id, [])]
        self._sources.add_relevance(expanded)
        text = request.query.strip() if request.has_text else None
        scored = self._search.score(expanded, ctx, text, extract_keywords(text), gate=False)
        order_rows(scored, "score")
        response["_expanded"] = [result_entry(r) for r in scored]

    def _edges(self, ids: list[str], per_seed: int):
        return neighbours(self._sources.graph, ids, per_seed=per_seed, with_memories=False)

    def _hydrate(self, ids: list[str], per_seed: int):
        try:
            return self._edges(ids, per_seed)
        except Exception as exc:
            log.warning("relations not hydrated, graph unavailable: %s", exc)
            return {}

    def _diagnose(self, request: RecallRequest, ctx: SearchContext, queries: list[str | None], response: dict) -> None:
        """Diagnostics read off the final results: entities the query names, contradictions."""
        results = response["results"]
        # Enrichment runs in the enrichment actors, never inline: recall enriches nothing.
        response["jit_enriched_count"] = 0
        response["entities"] = named_entities(queries, [(r["id"], r["memory"]) for r in results])
        if not ctx.current_only:
            return
        if request.state_debug:
            returned = [r["id"] for r in results]
            try:
                edges = contradictions(self._sources.graph, returned)
            except Exception as exc:
                log.warning("contradictions not reported, graph unavailable: %s", exc)
                ctx.state.degraded = True
                edges = []
            suppressed = {s["id"]: s["reason"] for s in ctx.state.suppressed}
            ctx.state.contradictions = contradiction_details(edges, set(returned), suppressed)
        # again, now that expansion's state checks are in too
        response["state_filter"] = ctx.state.summary(request.state_debug)

    def _record_access(self, ids: list[str]) -> None:
        if ids and self._on_access:
            try:
                self._on_access(list(dict.fromkeys(ids)))
            except Exception:  # access tracking must never fail a recall
                log.exception("could not enqueue last_accessed update")

    # --- response -----------------------------------------------------------------------
    def _respond(self, request, ctx: SearchContext, seeds, sort, queries, multi, dedup_removed) -> dict[str, Any]:
        tf = ctx.scope.tags
        response: dict[str, Any] = {
            "status": "success",
            "query": request.query,
            "results": [],
            "count": 0,
            "dedup_removed": dedup_removed,
            "sort": sort,
            "state_mode": request.state_mode,
            "keywords": extract_keywords(request.query),
            "vector_search": ctx.vector_status.as_dict(),
            "tags": list(tf.tags),
            "exclude_tags": list(request.exclude_tags),
            "tag_mode": tf.mode,
            "tag_match": tf.match,
        }
        if multi:
            response["queries"] = queries
        if ctx.current_only:
            response["state_filter"] = ctx.state.summary(request.state_debug)
        if tf.active:
            response["tag_scope"] = {
                "filtered": True,
                "pool_size_hint": ctx.pool_size_hint,
                "gated_low_evidence": sum(1 for r in seeds if r.components.get("relevance_gated")),
            }
        return response
