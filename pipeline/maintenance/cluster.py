"""Cluster: group similar memories and write one MetaPattern memory per group.

1. sample (vector queue): a random sample of at most ``CONSOLIDATION_CLUSTER_SAMPLE``
   embeddings is read back from the vector store, a page at a time, and kept in Redis for the
   run (float16).
2. fit (graph queue): the sample is clustered with scikit-learn's MiniBatchKMeans (cosine
   geometry: unit vectors); only the centres are kept. The fit is seconds of a core: on the
   graph queue it runs in a worker process, at the workers' lower priority, rather than in the
   web, which owns the vector queue with Qdrant Edge and answers recall.
3. assign (vector queue): every memory's embedding, a page at a time, joins its nearest
   centre when it is close enough (``CONSOLIDATION_CLUSTER_MIN_SIMILARITY``).
4. write (graph): each cluster with enough members becomes a MetaPattern memory — summary,
   shared tags, mean importance — linked to its members, and its centre is indexed as its
   vector (so it never reads as drift). MetaPattern is excluded from recall by default.
5. retire (graph): MetaPatterns of earlier runs are deleted, with their vectors: a new run
   replaces the old summaries rather than piling up beside them.

Memory is bounded by the sample size and one page, whatever the store holds.
"""

from __future__ import annotations

import io
import math
import uuid
from collections import Counter
from typing import Any

import numpy as np
import orjson

from pipeline.maintenance import graph_ops
from pipeline.maintenance.cycles import GRAPH, VECTORS, Phase, RunContext, StepResult
from pipeline.maintenance.relationships import link_pattern_members
from pipeline.maintenance.runs import state_key
from pipeline.query.keywords import extract_keywords
from pipeline.records import MemoryRecord, iso
from pipeline.resilience import store_call
from pipeline.vectors import ARCHIVED, vector_payload

META_PATTERN = "MetaPattern"
CLUSTERS_PER_STEP = 20
_PATTERN_NAMESPACE = uuid.UUID("0b8e5f0e-3c1a-4d55-9a57-6d6574617061")


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def cluster_count(samples: int, target_size: int, max_clusters: int) -> int:
    return max(1, min(max_clusters, samples, math.ceil(samples / target_size)))


# Below this many point-centre pairs full k-means is cheap and finds the better optimum;
# above it MiniBatchKMeans keeps the fit to seconds.
FULL_KMEANS_MAX_WORK = 200_000


def fit_centres(vectors: np.ndarray, clusters: int, seed: int = 0) -> np.ndarray:
    """Unit-length cluster centres of unit-length vectors (spherical k-means, approximately)."""
    from sklearn.cluster import KMeans, MiniBatchKMeans
    from threadpoolctl import threadpool_limits

    if len(vectors) * clusters <= FULL_KMEANS_MAX_WORK:
        model = KMeans(n_clusters=clusters, random_state=seed, n_init=4)
    else:
        model = MiniBatchKMeans(n_clusters=clusters, random_state=seed, n_init=3, batch_size=1024)
    # One BLAS thread: the fit runs beside the web process's other work, and OpenBLAS threads
    # spinning against busy cores make the same fit several times slower.
    with threadpool_limits(1):
        model.fit(vectors)
    return _unit_rows(model.cluster_centers_.astype(np.float32))


# What the sample and assign read of each point besides its vector: the page is read in the web, beside
# recall, and a whole payload (the content, the packed document) is most of a page's cost.
CANDIDATE_FIELDS = ["memory_id", "lifecycle", "type"]


def _is_candidate(payload: dict[str, Any], excluded: frozenset[str]) -> bool:
    archived = payload.get("lifecycle") == ARCHIVED or payload.get("archived")
    return not archived and payload.get("type") not in excluded


def sample_step(ctx: RunContext, cursor: Any) -> StepResult:
    """One page of the sample: its embeddings, kept in Redis under the page's offset (so a
    redelivered page replaces itself). The ids are drawn once, by the first page."""
    s = ctx.settings
    redis = ctx.runs.redis
    ids_key = state_key(ctx.run.id, "sample_ids")
    if cursor is None and not redis.exists(ids_key):  # a redelivered first page keeps the first draw
        ids = store_call(graph_ops.sample_ids)(ctx.services.graph, s.consolidation_cluster_sample, s.excluded_types)
        redis.set(ids_key, orjson.dumps(ids), nx=True, ex=86_400)
    ids = orjson.loads(redis.get(ids_key) or b"[]")
    start = int(cursor or 0)
    end = start + ctx.page_size
    result = StepResult(cursor=end if end < len(ids) else None)
    found = store_call(ctx.services.vectors.retrieve)(ids[start:end], with_vectors=True, payload_fields=CANDIDATE_FIELDS)
    rows = [r.vector for r in found.values() if r.vector is not None and _is_candidate(r.payload, s.excluded_types)]
    result.add("sampled", len(rows))
    if rows:
        buffer = io.BytesIO()
        np.save(buffer, _unit_rows(np.asarray(rows, dtype=np.float32)).astype(np.float16), allow_pickle=False)
        redis.hset(state_key(ctx.run.id, "sample"), str(start), buffer.getvalue())
        redis.expire(state_key(ctx.run.id, "sample"), 86_400)
    return result


def fit_step(ctx: RunContext, cursor: Any) -> StepResult:
    s = ctx.settings
    result = StepResult()
    redis = ctx.runs.redis
    if redis.exists(state_key(ctx.run.id, "k")):
        return result  # a redelivered fit: the centres are kept already
    pages = [np.load(io.BytesIO(raw), allow_pickle=False) for raw in redis.hvals(state_key(ctx.run.id, "sample"))]
    sample = np.vstack(pages).astype(np.float32) if pages else np.empty((0, 0), dtype=np.float32)
    if len(sample) < s.consolidation_cluster_min_size:
        redis.set(state_key(ctx.run.id, "k"), 0, ex=86_400)
    else:
        k = cluster_count(len(sample), s.consolidation_cluster_target_size, s.consolidation_cluster_max_clusters)
        centres = fit_centres(_unit_rows(sample), k)
        redis.set(state_key(ctx.run.id, "centres"), centres.tobytes(), ex=86_400)
        redis.set(state_key(ctx.run.id, "k"), k, ex=86_400)
        result.add("fitted_clusters", k)
    redis.delete(state_key(ctx.run.id, "sample"), state_key(ctx.run.id, "sample_ids"))
    return result


def _centres(ctx: RunContext) -> np.ndarray | None:
    redis = ctx.runs.redis
    k = int(redis.get(state_key(ctx.run.id, "k")) or 0)
    raw = redis.get(state_key(ctx.run.id, "centres"))
    if not k or raw is None:
        return None
    return np.frombuffer(raw, dtype=np.float32).reshape(k, -1)


def assign_step(ctx: RunContext, cursor: Any) -> StepResult:
    s = ctx.settings
    centres = _centres(ctx)
    if centres is None:
        return StepResult()
    page, next_offset = store_call(ctx.services.vectors.scroll)(cursor, ctx.page_size, with_vectors=True,
                                                               payload_fields=CANDIDATE_FIELDS)
    result = StepResult(cursor=next_offset)
    page = [r for r in page if r.vector is not None and _is_candidate(r.payload, s.excluded_types)]
    if not page:
        return result
    similarity = _unit_rows(np.asarray([r.vector for r in page], dtype=np.float32)) @ centres.T
    best = similarity.argmax(axis=1)
    pipe = ctx.runs.redis.pipeline(transaction=False)
    assigned = 0
    for record, cluster, sims in zip(page, best, similarity):
        score = float(sims[cluster])
        if score >= s.consolidation_cluster_min_similarity:
            key = state_key(ctx.run.id, f"members:{int(cluster)}")
            pipe.zadd(key, {record.memory_id: score})
            pipe.expire(key, 86_400)
            assigned += 1
    pipe.execute()
    result.add("examined", len(page))
    result.add("assigned", assigned)
    return result


def summarise(members: list[dict[str, Any]], total: int) -> tuple[str, list[str]]:
    """A readable summary without an LLM: shared tags, frequent terms, the most central example."""
    tag_counts = Counter(t for m in members for t in dict.fromkeys(m.get("tags") or []))
    shared = [t for t, n in tag_counts.most_common(5) if n * 2 >= len(members)]
    terms = Counter(k for m in members for k in extract_keywords(m.get("content")))
    top_terms = [t for t, _ in terms.most_common(8)]
    example = (members[0].get("content") or "").strip().replace("\n", " ")
    if len(example) > 240:
        example = example[:237] + "..."
    scope = f" tagged {', '.join(shared)}" if shared else ""
    return f"Pattern across {total} memories{scope}: {', '.join(top_terms)}. Example: {example}", shared


def write_step(ctx: RunContext, cursor: Any) -> StepResult:
    s = ctx.settings
    centres = _centres(ctx)
    if centres is None:
        return StepResult()
    start = int(cursor or 0)
    end = min(start + CLUSTERS_PER_STEP, len(centres))
    result = StepResult(cursor=end if end < len(centres) else None)
    graph = ctx.services.graph
    redis = ctx.runs.redis
    for cluster in range(start, end):
        ranked = redis.zrevrange(state_key(ctx.run.id, f"members:{cluster}"), 0, s.consolidation_cluster_max_members - 1, withscores=True)
        if len(ranked) < s.consolidation_cluster_min_size:
            continue
        member_ids = [m.decode() for m, _ in ranked]
        pattern_id = str(uuid.uuid5(_PATTERN_NAMESPACE, f"{ctx.run.id}:{cluster}"))
        result.add("clusters", 1)
        result.add("members", len(member_ids))
        result.samples.setdefault("clusters", []).append(",".join(sorted(member_ids)[:20]))
        if ctx.dry_run:
            continue
        head = store_call(graph.get_memories)(member_ids[:20])
        examples = [head[m] for m in member_ids[:20] if m in head]
        content, tags = summarise(examples, len(member_ids))
        importances = [float(m.get("importance") or 0.5) for m in examples] or [0.5]
        record = MemoryRecord(
            id=pattern_id, content=content, tags=tags, importance=round(sum(importances) / len(importances), 4),
            confidence=round(sum(score for _, score in ranked) / len(ranked), 4), type=META_PATTERN,
            type_source="consolidation", timestamp=iso(ctx.now), updated_at=iso(ctx.now),
            metadata={"cluster_run": ctx.run.id, "member_count": len(member_ids), "members_sample": member_ids[:10]},
        )
        store_call(graph.upsert_memories)([record])
        store_call(graph.run_write)("MATCH (m:Memory {id: $id}) SET m.cluster_run = $run", {"id": pattern_id, "run": ctx.run.id})
        links = [{"id": m.decode(), "strength": round(score, 6)} for m, score in ranked]
        for chunk in range(0, len(links), 500):
            store_call(link_pattern_members)(graph, pattern_id, links[chunk : chunk + 500], iso(ctx.now))
        memory = store_call(graph.get_memory)(pattern_id)
        ctx.outbox.index([{"id": pattern_id, "op": "store", "text": content, "payload": vector_payload(memory),
                           "vector": centres[cluster].tolist()}])
        result.samples.setdefault("patterns", []).append(pattern_id)
    return result


def retire_step(ctx: RunContext, cursor: Any) -> StepResult:
    graph = ctx.services.graph
    stale = store_call(graph_ops.stale_meta_patterns)(graph, ctx.run.id, cursor, ctx.page_size)
    result = StepResult(cursor=stale[-1] if len(stale) == ctx.page_size else None)
    result.count("retired_patterns", stale)
    if stale and not ctx.dry_run:
        store_call(graph.delete_memories)(stale)
        ctx.outbox.drop_vectors(stale)
    return result


PHASES = [
    Phase("sample", VECTORS, sample_step),
    Phase("fit", GRAPH, fit_step),
    Phase("assign", VECTORS, assign_step),
    Phase("write", GRAPH, write_step),
    Phase("retire", GRAPH, retire_step),
]
