"""Candidate gathering: vector search, full-text search, the metadata sidecar, trending, ids.

Each source degrades on its own: a store that fails yields no candidates from that source
(and a flag in the diagnostics), never a failed recall.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from pipeline.embedding import Embedder, HashEmbedder
from pipeline.graph import GraphStore, Scope, metadata_search_text
from pipeline.query.keywords import fulltext_terms, stem
from pipeline.query.graph_reads import relevance_scores
from pipeline.query.lexical import PoolBM25
from pipeline.query.names import without_names
from pipeline.query.pronouns import in_first_person
from pipeline.vectors import VectorQuery, VectorStore

log = logging.getLogger(__name__)
_WORD = re.compile(r"[a-z0-9]+")


@dataclass
class Candidate:
    """One memory on its way to a result, with what the sources said about it."""

    memory: dict[str, Any]
    match_type: str
    source: str
    vector: float = 0.0
    match_score: float = 0.0  # the raw score of the source that admitted it
    metadata: float = 0.0
    relation: float = 0.0
    query: str | None = None
    outside_tag_scope: bool = False
    relations: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # match-type specific result fields
    # admitted only by the wider keyword channel (a full-text slot past the first per result, or the
    # topic search): RECALL_KEYWORD_EXTRA_GIVES decides which neighbour shares it passes on
    widened: bool = False

    @property
    def id(self) -> str:
        return self.memory["id"]


def from_payload(payload: dict[str, Any], memory_id: str) -> dict[str, Any]:
    memory = {**payload, "id": memory_id}
    # The relevance score lives on the node (``add_relevance``); a point written before that
    # may still hold an old copy.
    memory.pop("relevance_score", None)
    return memory


@dataclass
class VectorStatus:
    enabled: bool = False
    matched: bool = False
    error: str | None = None
    embedding_fallback: bool = False

    def as_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"enabled": self.enabled, "matched": self.matched}
        if self.error:
            body["error"] = self.error
        if self.embedding_fallback:
            body["embedding_fallback"] = True
            body["semantic"] = False
        return body


# the query's second text (RECALL_QUERY_NAMELESS_FORM)
_SECOND_FORMS = {"drop": without_names, "pronouns": in_first_person}


class CandidateSources:
    """The stores, reached lazily (a store that is down must not stop the others)."""

    def __init__(
        self,
        graph: Callable[[], GraphStore],
        vectors: Callable[[], VectorStore],
        embedder: Callable[[], Embedder],
        dimensions: Callable[[], int],
        adapt_query: Callable[[list[float]], list[float]] | None = None,
    ):
        self._graph = graph
        self._vectors = vectors
        self._embedder = embedder
        self._dimensions = dimensions
        self._adapt_query = adapt_query or (lambda vector: vector)

    @property
    def graph(self) -> GraphStore:
        return self._graph()

    def query_vector(self, text: str, status: VectorStatus, nameless_weight: float = 0.0,
                     nameless_form: str = "drop") -> list[float]:
        """The query's embedding; when the provider fails, the spec's deterministic placeholder.

        With ``nameless_weight`` and a query that names someone, the normalised sum of the
        query's vector and ``nameless_weight`` × the vector of its second form, both from one
        provider call: ``drop`` leaves its names out (``names.py``), ``pronouns`` puts them as
        the speakers would say them (``pronouns.py``). The query adapter (``adapter.py``), when
        one is configured, maps the result; the placeholder is left as it is.
        """
        try:
            nameless = _SECOND_FORMS[nameless_form](text) if nameless_weight > 0 else None
            if nameless is None:
                return self._adapt_query(self._embedder().embed([text])[0])
            plain, other = self._embedder().embed([text, nameless])
            combined = np.asarray(plain, dtype=np.float64) + nameless_weight * np.asarray(other, dtype=np.float64)
            norm = float(np.linalg.norm(combined))
            return self._adapt_query((combined / norm).tolist() if norm else list(plain))
        except Exception as exc:
            log.warning("embedding the query failed (%s); using a placeholder vector", exc)
            status.embedding_fallback = True
            return HashEmbedder(self._dimensions()).embed([text])[0]

    def vector(self, vector: list[float], scope: Scope, limit: int, status: VectorStatus, query: str | None) -> list[Candidate]:
        status.enabled = True
        try:
            hits = self._vectors().search(VectorQuery(vector, limit, scope))
        except Exception as exc:  # recall degrades to graph-only rather than failing
            log.warning("vector search failed; answering from the graph only: %s", exc)
            status.enabled, status.error = False, type(exc).__name__
            return []
        status.matched = status.matched or bool(hits)
        return [Candidate(from_payload(h.payload, h.memory_id), "vector", "qdrant", vector=h.score,
                          match_score=h.score, query=query) for h in hits]

    def score_vectors(self, vector: list[float], candidates: list[Candidate]) -> None:
        """Give candidates that another source admitted their cosine similarity to the query.

        Without it a keyword or metadata candidate enters the hybrid score with vector 0 and
        can rarely outrank a vector hit, however well its words match (issue 7).
        """
        missing = [c for c in candidates if c.vector == 0.0]
        if not missing:
            return
        try:
            records = self._vectors().retrieve([c.id for c in missing], with_vectors=True)
        except Exception as exc:  # the stored vectors are a refinement; without them, keep 0
            log.warning("vectors of keyword candidates not read: %s", exc)
            return
        for candidate in missing:
            record = records.get(candidate.id)
            if record is not None and record.vector is not None:
                candidate.vector = cosine(vector, record.vector)

    def keyword(self, keywords: list[str], scope: Scope, limit: int, query: str | None,
                rerank: PoolBM25 | None = None, read: int = 0, source: str = "graph",
                vector: list[float] | None = None) -> list[Candidate]:
        """Keyword candidates: the best ``limit`` matches of the query's words.

        ``source`` ``auto``: BM25 inside the vector store (Edge's scored text index, one
        in-process call, hits carrying their vectors, so ``vector`` gives them their cosine
        here); where the store offers none (a Qdrant server, an Edge shard not yet migrated),
        and with ``graph``, the FalkorDB full-text index.

        The full-text index's own order is no guide to which matches are best: every match of
        a speaker's name scores alike, so its top rows are whoever said the name, not the turns
        that share the query's rarer words. With ``rerank`` it reads up to ``read`` matches and
        ranks them by BM25 over that match set (IDF among the memories that share any query
        term) to keep the ones that do.
        """
        terms = fulltext_terms(keywords)
        if not terms or limit <= 0:
            return []
        if source == "auto":
            found = self._text_hits(" ".join(terms), scope, limit, query, vector)
            if found is not None:
                return found
        try:
            if rerank is not None and query and read > limit:
                rows = self._ranked_matches(terms, scope, limit, query, rerank, read)
            else:
                rows = self.graph.keyword_search(terms, scope, limit)
        except Exception as exc:
            log.warning("keyword search failed; answering from vectors only: %s", exc)
            return []
        return [Candidate(m, "keyword", "graph", match_score=score, query=query) for m, score in rows]

    def _text_hits(self, text: str, scope: Scope, limit: int, query: str | None,
                   vector: list[float] | None) -> list[Candidate] | None:
        """BM25 hits from the vector store's text index; None when it has none (use the graph)."""
        try:
            hits = self._vectors().text_search(text, scope, limit)
        except Exception as exc:  # the graph's index answers instead
            log.warning("vector store keyword search failed; using the graph's full-text index: %s", exc)
            return None
        if hits is None:
            return None
        similarities = cosines(vector, [h.vector for h in hits]) if vector is not None else [0.0] * len(hits)
        return [Candidate(from_payload(h.payload, h.memory_id), "keyword", "qdrant", match_score=h.score, query=query,
                          vector=similarity) for h, similarity in zip(hits, similarities)]

    def _ranked_matches(self, terms: list[str], scope: Scope, limit: int, query: str, rerank: PoolBM25,
                        read: int) -> list[tuple[dict[str, Any], float]]:
        """Read up to ``read`` matches as text, keep the best ``limit`` by BM25, then load those."""
        matches = self.graph.keyword_matches(terms, scope, read)
        if len(matches) > limit:
            bm25 = rerank.scores(query, [content for _, content, _ in matches])
            order = sorted(range(len(matches)), key=lambda i: bm25[i], reverse=True)[:limit]
            matches = [matches[i] for i in order]
        memories = self.graph.recall_memories([memory_id for memory_id, _, _ in matches])
        return [(memories[memory_id], score) for memory_id, _, score in matches if memory_id in memories]

    def metadata(self, keywords: list[str], scope: Scope, slots: int, min_match: float, query: str | None) -> list[Candidate]:
        """The sidecar: memories whose short metadata values hold most of the query's keywords."""
        terms = fulltext_terms(keywords)
        if not terms:
            return []
        try:
            rows = self.graph.keyword_search(terms, scope, slots * 4, field="metadata_text")
        except Exception as exc:
            log.warning("metadata sidecar search failed: %s", exc)
            return []
        admitted = []
        for memory, score in rows:
            share = metadata_match(keywords, memory)
            if share >= min_match:
                admitted.append(Candidate(memory, "metadata", "graph", metadata=share, match_score=score, query=query))
        admitted.sort(key=lambda c: c.metadata, reverse=True)
        return admitted[:slots]

    def trending(self, scope: Scope, limit: int, order: str) -> list[Candidate]:
        try:
            rows = self.graph.trending(scope, limit, order)
        except Exception as exc:
            log.warning("trending query failed: %s", exc)
            return []
        return [Candidate(m, "trending", "graph", match_score=float(m.get("importance") or 0.0)) for m in rows]

    def by_ids(self, memory_ids: list[str]) -> dict[str, dict[str, Any]]:
        if not memory_ids:
            return {}
        try:
            return self.graph.get_memories(memory_ids)
        except Exception as exc:
            log.warning("fetching memories by id failed: %s", exc)
            return {}

    def add_relevance(self, candidates: list[Candidate]) -> None:
        """Give the vector store's hits their relevance score, which only the graph holds."""
        from_vectors = [c for c in candidates if c.source == "qdrant"]
        if not from_vectors:
            return
        try:
            scores = relevance_scores(self.graph, sorted({c.id for c in from_vectors}))
        except Exception as exc:  # recall answers without it, as for a memory decay has not scored
            log.warning("relevance scores not read, graph unavailable: %s", exc)
            return
        for candidate in from_vectors:
            if scores.get(candidate.id) is not None:
                candidate.memory["relevance_score"] = scores[candidate.id]

    def tagged(self, vector: list[float] | None, scope: Scope, limit: int) -> list[dict[str, Any]]:
        """Memories in a (tag) scope, nearest to ``vector`` first; graph order without one."""
        if vector is not None:
            hits = self._vectors().search(VectorQuery(vector, limit, scope))
            return [from_payload(h.payload, h.memory_id) for h in hits]
        return self.graph.trending(scope, limit)


def cosine(a: list[float], b: list[float]) -> float:
    """Cosine similarity, as the vector store scores a hit (stored vectors may be unnormalised);
    0.0 for vectors of different sizes (one read across a dimension migration's switch)."""
    if len(a) != len(b):
        return 0.0
    left, right = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    norms = float(np.linalg.norm(left) * np.linalg.norm(right))
    return float(left @ right) / norms if norms else 0.0


def cosines(query: list[float], vectors: list[list[float] | None]) -> list[float]:
    """``cosine`` of the query with each vector in one matrix product (0.0 where a vector is
    missing or of another size): per hit, numpy's call overhead would be most of the cost."""
    present = [i for i, v in enumerate(vectors) if v is not None and len(v) == len(query)]
    result = [0.0] * len(vectors)
    if not present:
        return result
    matrix = np.asarray([vectors[i] for i in present], dtype=np.float32)
    left = np.asarray(query, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(left))
    dots = matrix @ left
    for row, i in enumerate(present):
        result[i] = float(dots[row] / norms[row]) if norms[row] else 0.0
    return result


def metadata_match(keywords: list[str], memory: dict[str, Any]) -> float:
    """Share of query keywords found among the words of the memory's metadata values."""
    if not keywords:
        return 0.0
    words = set(_WORD.findall(metadata_search_text(memory.get("metadata") or {}).lower()))
    words |= {stem(w) for w in words}
    found = sum(1 for k in keywords if k in words or stem(k) in words)
    return found / len(keywords)
