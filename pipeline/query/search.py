"""One query's pool: gather candidates, apply the current-state filter, score, order.

The engine runs this once per query (``queries[]`` and ``auto_decompose`` run it several
times) and then assembles the response from the pools.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pipeline.config import ScoringWeights, Settings
from pipeline.graph import Scope
from pipeline.query.asks import question_share
from pipeline.query.beside import INLINE, Beside
from pipeline.query.candidates import Candidate, CandidateSources, VectorStatus
from pipeline.query.context import ContextProfile
from pipeline.query.filters import in_scope, parse_epoch
from pipeline.query.graph_reads import replacements
from pipeline.query.keywords import extract_keywords
from pipeline.query.lexical import PoolBM25
from pipeline.query.neighbours import ChainedPairs, apply_neighbour_bonus, chained_pairs, same_speaker
from pipeline.query.request import RecallRequest
from pipeline.query.response import Scored
from pipeline.query.scoring import RecencyPolicy, apply_relevance_gate, final_score, score_components
from pipeline.query.state import StateReport, resolve_heads, validity_reason
from pipeline.query.topics import topic_keywords
from pipeline.query.when import asks_when, in_periods, named_periods, states_time

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchPolicy:
    """The settings one search needs, read once from Settings (``from_settings``: no defaults here)."""

    weights: ScoringWeights
    recency: RecencyPolicy
    overfetch: int
    fetch_cap: int
    keyword_mode: str
    metadata_enabled: bool
    metadata_min_match: float
    relevance_gate: float
    entity_score: float
    keyword_read: int
    scoped_fetch_factor: int
    keyword_per_result: int
    keyword_topic_per_result: int  # a second text search without the query's names (query/topics.py)
    far_same_speaker: bool  # the two-apart neighbour share only between one speaker's turns (query/neighbours.py)
    keyword_extra_gives: str  # the neighbour shares the wider keyword channel's own candidates pass on (both, adjacent, far, none)
    keyword_extra_min_vector: float  # ... and the cosine they need to join the pool at all (0 = none)
    keyword_source: str
    nameless_weight: float  # the query also embedded without its names (query/names.py)
    nameless_form: str  # ... its names left out ("drop") or as pronouns ("pronouns", query/pronouns.py)
    scope_prefixes: tuple[str, ...]  # the neighbour read pairs a batch's turns before enrichment chains them
    lexical: PoolBM25 = field(default_factory=PoolBM25)

    @classmethod
    def from_settings(cls, settings: Settings) -> SearchPolicy:
        return cls(
            weights=settings.scoring_weights,
            recency=RecencyPolicy.from_settings(settings),
            overfetch=settings.recall_vector_overfetch,
            fetch_cap=settings.recall_vector_fetch_cap,
            keyword_mode=settings.recall_keyword_search,
            metadata_enabled=settings.recall_metadata_search_enabled,
            metadata_min_match=settings.recall_metadata_min_match,
            relevance_gate=settings.recall_relevance_gate,
            entity_score=settings.recall_entity_expansion_score,
            keyword_read=settings.recall_keyword_read,
            scoped_fetch_factor=settings.recall_scoped_fetch_factor,
            keyword_per_result=settings.recall_keyword_per_result,
            keyword_topic_per_result=settings.recall_keyword_topic_per_result,
            far_same_speaker=settings.recall_neighbour_far_same_speaker,
            keyword_extra_gives=settings.recall_keyword_extra_gives,
            keyword_extra_min_vector=settings.recall_keyword_extra_min_vector,
            keyword_source=settings.recall_keyword_source,
            nameless_weight=settings.recall_query_nameless_weight,
            nameless_form=settings.recall_query_nameless_form,
            scope_prefixes=settings.scope_prefixes,
        )

    def fetch_size(self, limit: int, scoped: bool) -> int:
        size = max(limit, min(limit * self.overfetch, self.fetch_cap))
        # A tag scope thins the pool after the fact on nothing, but re-ranking inside a narrow
        # scope can benefit from a wider look (still capped).
        return max(size, min(size * self.scoped_fetch_factor, self.fetch_cap)) if scoped else size


@dataclass
class SearchContext:
    """Per-request state shared by every query of the request."""

    scope: Scope
    profile: ContextProfile
    now: datetime
    current_only: bool
    vector_status: VectorStatus = field(default_factory=VectorStatus)
    state: StateReport = field(default_factory=StateReport)
    pool_size_hint: int | None = None
    query_vectors: dict[str | None, list[float]] = field(default_factory=dict)

    @property
    def now_epoch(self) -> float:
        return self.now.timestamp()

    def admissible(self, memory: dict[str, Any]) -> bool:
        """Validity of a memory reached outside the candidate search (expansion, replacement)."""
        return not self.current_only or validity_reason(memory, self.now_epoch) is None


def time_key(memory: dict[str, Any]) -> float:
    """coalesce(updated_at, timestamp) as epoch seconds; unknown sorts oldest."""
    for name, epoch_name in (("updated_at", "updated_epoch"), ("timestamp", "timestamp_epoch")):
        value = memory.get(epoch_name)
        if isinstance(value, (int, float)):
            return float(value)
        parsed = parse_epoch(memory.get(name))
        if parsed is not None:
            return parsed
    return float("-inf")


def _admit_metadata_matches(pool: list[Candidate], matches: list[Candidate]) -> None:
    """Add the metadata sidecar's matches to ``pool``; one already there keeps the stronger metadata score."""
    by_id = {c.id: c for c in pool}
    for match in matches:
        if match.id in by_id:  # a strong metadata match upgrades what is already in the pool
            by_id[match.id].metadata = max(by_id[match.id].metadata, match.metadata)
            by_id[match.id].widened = False  # the sidecar admits it without the wider keyword channel
        else:
            pool.append(match)


class QuerySearch:
    def __init__(self, sources: CandidateSources, policy: SearchPolicy, beside: Beside = INLINE):
        self._sources = sources
        self._policy = policy
        self._beside = beside  # where the graph reads that need nothing else start (beside.py)

    # --- candidates --------------------------------------------------------------------
    def _gather(self, request: RecallRequest, ctx: SearchContext, keywords: list[str], sort: str) -> list[Candidate]:
        text = request.query.strip() if request.has_text else None
        scoped = ctx.scope.tags.active
        fetch = self._policy.fetch_size(request.limit, scoped)
        if text is None and request.embedding is None:
            order = "importance" if sort == "score" else ("time_asc" if sort.endswith("_asc") else "time_desc")
            return self._sources.trending(ctx.scope, request.limit, order)

        sidecar = None
        if text and self._policy.metadata_enabled:  # needs only the keywords: the graph works while we embed and search
            sidecar = self._beside.start(lambda: self._sources.metadata(
                keywords, ctx.scope, max(1, min(request.limit, 10)), self._policy.metadata_min_match, text))
        vector = request.embedding
        if vector is None:
            vector = self._sources.query_vector(text, ctx.vector_status, self._policy.nameless_weight,
                                                 self._policy.nameless_form)
        ctx.query_vectors[text] = vector
        always = self._policy.keyword_mode == "always"
        keyword_share = min(fetch, request.limit * self._policy.keyword_per_result)
        early_keywords = None
        # its own share does not depend on the vector pool: searched before it
        if text and always:
            try:
                early_keywords = self._keyword_candidates(keywords, ctx, keyword_share, text, vector)
            except Exception as exc:  # the keyword source logs its own failures; the pool stands without it
                log.warning("keyword search failed: %s", exc)
                early_keywords = []
        pool = self._sources.vector(vector, ctx.scope, fetch, ctx.vector_status, text)
        if scoped and ctx.vector_status.enabled:
            ctx.pool_size_hint = (ctx.pool_size_hint or 0) + len(pool)
        seen = seen_vector = {c.id for c in pool}
        if text and (always or len(pool) < request.limit):
            # "fill" tops the pool up to the fetch size; "always" also brings its own share, a few
            # per requested result: BM25-ranked, the best matches are at the top, so a small
            # share recalls about as well as a large one with less to score
            slots = fetch - len(pool)
            found = early_keywords
            if found is None or slots > keyword_share:  # "fill", or a short vector pool wants more
                found = self._keyword_candidates(keywords, ctx, max(slots, keyword_share if always else 0), text, vector)
            if always:  # BM25-ordered: one slot per result (or the open slots) reads this far; the rest is the wider channel's
                for candidate in found[max(slots, request.limit):]:
                    candidate.widened = True
            pool += [c for c in found if c.id not in seen]
        if text and always and self._policy.keyword_topic_per_result > 0:
            topical = self._topic_candidates(text, keywords, ctx, request.limit * self._policy.keyword_topic_per_result,
                                             vector, {c.id for c in pool})
            for candidate in topical:
                candidate.widened = True
            pool += topical
        if sidecar is not None:
            _admit_metadata_matches(pool, sidecar())
        if text and ctx.vector_status.enabled and len(pool) > len(seen_vector):
            # full-text and sidecar admissions get the similarity a vector hit would have had
            self._sources.score_vectors(vector, [c for c in pool if c.id not in seen_vector])
            floor = self._policy.keyword_extra_min_vector
            if floor > 0:  # a match far from the query's meaning shares a word in another sense (issue 23)
                pool = [c for c in pool if not c.widened or c.vector >= floor]
        return pool

    def _topic_candidates(self, text: str, keywords: list[str], ctx: SearchContext, slots: int, vector: list[float],
                          seen: set[str]) -> list[Candidate]:
        """The second text search: the query's words less its names; nothing when it names no one."""
        topics = topic_keywords(text, keywords)
        if not topics:
            return []
        try:
            found = self._keyword_candidates(topics, ctx, slots, text, vector)
        except Exception as exc:  # as the first search: the pool stands without it
            log.warning("topic keyword search failed: %s", exc)
            return []
        return [c for c in found if c.id not in seen]

    def _keyword_candidates(self, keywords: list[str], ctx: SearchContext, slots: int, text: str,
                            vector: list[float]) -> list[Candidate]:
        return self._sources.keyword(keywords, ctx.scope, slots, text, self._policy.lexical, self._policy.keyword_read,
                                     self._policy.keyword_source, vector)

    def _chained_pairs(self, ids: list[str], steps: int,
                       members: dict[str, tuple[float | None, list[str]]]) -> ChainedPairs | None:
        try:
            return chained_pairs(self._sources.graph, ids, steps, self._policy.scope_prefixes, members)
        except Exception as exc:  # a ranking refinement: recall answers without it
            log.warning("neighbour bonus skipped, graph unavailable: %s", exc)
            return None

    def _add_priority(self, pool: list[Candidate], ctx: SearchContext, text: str | None) -> int:
        missing = [i for i in ctx.profile.priority_ids if i not in {c.id for c in pool}]
        fetched = self._sources.by_ids(missing)
        added = 0
        for memory_id in missing:
            memory = fetched.get(memory_id)
            if memory is not None and in_scope(memory, ctx.scope):  # never bypasses the filters
                pool.append(Candidate(memory, "priority_id", "graph", query=text))
                added += 1
        return added

    # --- lifecycle ---------------------------------------------------------------------
    def apply_state(self, pool: list[Candidate], ctx: SearchContext, replace: bool = True) -> list[Candidate]:
        """Drop what is not current; with ``replace``, surface the heads of supersession chains."""
        if not ctx.current_only:
            return pool
        kept = []
        for candidate in pool:
            reason = validity_reason(candidate.memory, ctx.now_epoch)
            if reason:
                ctx.state.suppressed.append({"id": candidate.id, "reason": reason})
            else:
                kept.append(candidate)
        try:
            heads = resolve_heads(
                [c.id for c in kept], lambda ids: replacements(self._sources.graph, ids), ctx.now_epoch,
                lambda m: in_scope(m, ctx.scope, check_tags=False),
            )
        except Exception as exc:
            log.warning("supersession check skipped, graph unavailable: %s", exc)
            ctx.state.degraded = True
            return kept
        present = {c.id for c in kept}
        result = []
        for candidate in kept:
            step = heads.get(candidate.id)
            if step is None:
                result.append(candidate)
                continue
            ctx.state.suppressed.append({"id": candidate.id, "reason": step.relation.lower(), "replaced_by": step.head["id"],
                                         "chain": list(step.chain)})
            if not replace or step.head["id"] in present:
                continue
            present.add(step.head["id"])
            ctx.state.replacements.append({"id": step.head["id"], "replaces": candidate.id, "relation": step.relation})
            result.append(Candidate(
                step.head, "state_replacement", "graph", vector=candidate.vector, match_score=candidate.match_score,
                query=candidate.query,
                relations=[{"id": candidate.id, "type": step.relation, "from": candidate.id, "kind": "state_replacement"}],
                extra={"state_replaces": candidate.id}, widened=candidate.widened,
            ))
        return result

    # --- scoring -----------------------------------------------------------------------
    def score(self, pool: list[Candidate], ctx: SearchContext, text: str | None, keywords: list[str], gate: bool,
              lexical: bool = False) -> list[Scored]:
        """Hybrid scores; with ``lexical``, plus the pool's BM25 (``SEARCH_WEIGHT_LEXICAL``), for a
        when-question the time-mention bonus (``SEARCH_WEIGHT_TIME_MENTION``, see ``when.py``), the
        date-match bonus, and less the questions' share (``SEARCH_WEIGHT_ASKS``, see ``asks.py``)."""
        weight = self._policy.weights.lexical
        bm25 = None
        if lexical and text and weight > 0 and pool:
            bm25 = self._policy.lexical.scores(text, [c.memory.get("content") or "" for c in pool])
        time_weight = self._policy.weights.time_mention if lexical and asks_when(text) else 0.0
        date_weight = self._policy.weights.date_match
        periods = named_periods(text) if lexical and date_weight > 0 else ()
        asks_weight = self._policy.weights.asks if lexical and text else 0.0
        rows = []
        for index, candidate in enumerate(pool):
            components = score_components(
                memory=candidate.memory, query=text, keywords=keywords, vector=candidate.vector, now=ctx.now,
                recency=self._policy.recency, metadata=candidate.metadata, relation=candidate.relation,
                context=ctx.profile.bonus(candidate.memory),
            )
            if gate:
                apply_relevance_gate(components, self._policy.relevance_gate)
            total = final_score(components, self._policy.weights)
            if bm25 is not None:  # a key of its own, like temporal: absent when the stage is off
                components["lexical"] = bm25[index]
                total += weight * bm25[index]
            if time_weight > 0:  # a key of its own too: present on every candidate of a when-question
                components["time_mention"] = 1.0 if states_time(candidate.memory.get("content")) else 0.0
                total += time_weight * components["time_mention"]
            if periods:  # the query names a day or month: present on every candidate then
                components["date_match"] = 1.0 if in_periods(_timestamp_epoch(candidate.memory), periods) else 0.0
                total += date_weight * components["date_match"]
            if asks_weight > 0:  # present on every candidate of a text query while the weight is on
                components["asks"] = question_share(candidate.memory.get("content"))
                total -= asks_weight * components["asks"]
            if candidate.match_type == "entity_expansion":
                components["entity_expansion"] = self._policy.entity_score
                total += components["entity_expansion"]
            rows.append(Scored(candidate, components, total))
        return rows

    def run(self, request: RecallRequest, ctx: SearchContext, sort: str) -> tuple[list[Scored], int]:
        """The ordered, scored pool of one query, and how many priority ids were fetched."""
        text = request.query.strip() if request.has_text else None
        keywords = extract_keywords(text)
        return self._ranked(request, ctx, sort, self._gather(request, ctx, keywords, sort), text, keywords)

    def run_widened(self, request: RecallRequest, ctx: SearchContext, sort: str, subqueries: list[str],
                    per_query: int) -> tuple[list[Scored], int, int]:
        """auto_decompose: the sub-queries only widen the question's pool; everything is scored
        against the question itself. Returns the rows, priority ids fetched, and how many
        sub-query candidates were already in the pool (``dedup_removed``).

        Scoring each sub-query's pool on its own and merging by score lets a name-only sub-query
        ("Caroline": exact, tag and keyword all fire on the name) flood the top with every turn of
        that person (docs/benchmarks-log.md, auto_decompose session 12).
        """
        text = request.query.strip()
        keywords = extract_keywords(text)
        pool = self._gather(request, ctx, keywords, sort)
        seen = {c.id for c in pool}
        duplicates = 0
        added: list[Candidate] = []
        for sub in subqueries:
            for found in self._gather(request.for_query(sub, per_query), ctx, extract_keywords(sub), sort):
                if found.id in seen:
                    duplicates += 1
                    continue
                seen.add(found.id)
                # what the sub-query's sources said (similarity, metadata match) was about the
                # sub-query: the candidate enters fresh and is measured against the question
                added.append(Candidate(found.memory, found.match_type, found.source, query=text,
                                       relations=found.relations, extra=found.extra, widened=found.widened))
        vector = ctx.query_vectors.get(text)
        if added and vector is not None and ctx.vector_status.enabled:
            self._sources.score_vectors(vector, added)
        rows, fetched = self._ranked(request, ctx, sort, pool + added, text, keywords)
        return rows, fetched, duplicates

    def _ranked(self, request: RecallRequest, ctx: SearchContext, sort: str, pool: list[Candidate],
                text: str | None, keywords: list[str]) -> tuple[list[Scored], int]:
        fetched = self._add_priority(pool, ctx, text) if ctx.profile.priority_ids else 0
        pending_pairs = None
        near, far = self._policy.weights.neighbour, self._policy.weights.neighbour_far
        if text and sort == "score" and (near > 0 or far > 0):  # the pool before the state check
            members = {c.id: (_timestamp_epoch(c.memory), c.memory.get("tags") or []) for c in pool}
            ids, steps = [c.id for c in pool], 2 if far > 0 else 1
            # read beside the state check and the relevance read: none needs another's answer
            pending_pairs = self._beside.start(lambda: self._chained_pairs(ids, steps, members))
        pool = self.apply_state(pool, ctx)
        self._sources.add_relevance(pool)
        gate = bool(text) and ctx.scope.tags.active and self._policy.relevance_gate > 0
        rows = self.score(pool, ctx, text, keywords, gate, lexical=True)
        chained = pending_pairs() if pending_pairs is not None else None
        if chained is not None:
            two_apart = same_speaker(rows, chained.two_apart) if self._policy.far_same_speaker else chained.two_apart
            apply_neighbour_bonus(rows, chained.adjacent, near, two_apart, far, *self._silent(rows))
        order_rows(rows, sort)
        return rows, fetched


    def _silent(self, rows: list[Scored]) -> tuple[frozenset[str], frozenset[str]]:
        """Who passes no adjacent and who no two-apart share: the wider keyword channel's own
        candidates match the query's words, not necessarily its meaning, so a turn that only shares a
        word should not lift the turn beside it (``RECALL_KEYWORD_EXTRA_GIVES``)."""
        gives = self._policy.keyword_extra_gives
        if gives == "both":
            return frozenset(), frozenset()
        widened = frozenset(row.id for row in rows if row.candidate.widened)
        return (frozenset() if gives == "adjacent" else widened), (frozenset() if gives == "far" else widened)


def _timestamp_epoch(memory: dict[str, Any]) -> float | None:
    """When the memory was written (its ``timestamp``), as epoch seconds."""
    value = memory.get("timestamp_epoch")
    return float(value) if isinstance(value, (int, float)) else parse_epoch(memory.get("timestamp"))


def order_rows(rows: list[Scored], sort: str) -> None:
    if sort == "score":  # highest first; exact ties newest first
        rows.sort(key=lambda r: (r.score, time_key(r.candidate.memory)), reverse=True)
    else:
        rows.sort(key=lambda r: time_key(r.candidate.memory), reverse=sort.endswith("_desc"))
