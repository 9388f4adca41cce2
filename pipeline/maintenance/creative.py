"""Creative: find non-obvious neighbours and link them with ``DISCOVERED`` edges.

Samples live memories, asks the vector index for each one's nearest neighbours, and keeps
those that are similar (within the configured similarity band) yet not connected in the
graph — and, by default, share no tag, so the link crosses tag scopes. Runs on the vector
queue: it searches the vector store.
"""

from __future__ import annotations

from typing import Any

import orjson

from pipeline.maintenance import graph_ops
from pipeline.maintenance.cycles import VECTORS, Phase, RunContext, StepResult
from pipeline.maintenance.relationships import link_discovered
from pipeline.maintenance.runs import state_key
from pipeline.records import iso
from pipeline.resilience import store_call
from pipeline.graph import Scope
from pipeline.vectors import VectorQuery

SEEDS_PER_STEP = 25
NEIGHBOURS_FETCHED = 10


def _seeds(ctx: RunContext, cursor: int) -> list[str]:
    key = state_key(ctx.run.id, "seeds")
    redis = ctx.runs.redis
    if cursor == 0 and not redis.exists(key):
        ids = store_call(graph_ops.sample_ids)(
            ctx.services.graph, ctx.settings.consolidation_creative_sample, ctx.settings.excluded_types
        )
        redis.set(key, orjson.dumps(ids), ex=86_400)  # fixed once, so a redelivered step sees the same sample
    return orjson.loads(redis.get(key) or b"[]")


def _share_tag(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return bool({t.lower() for t in a.get("tags") or []} & {t.lower() for t in b.get("tags") or []})


def creative_step(ctx: RunContext, cursor: Any) -> StepResult:
    s = ctx.settings
    start = int(cursor or 0)
    seeds = _seeds(ctx, start)
    chunk = seeds[start : start + SEEDS_PER_STEP]
    result = StepResult(cursor=start + SEEDS_PER_STEP if start + SEEDS_PER_STEP < len(seeds) else None)
    if not chunk:
        return result
    vectors = ctx.services.vectors
    stored = store_call(vectors.retrieve)(chunk, with_vectors=True)
    proposals: dict[frozenset[str], dict[str, Any]] = {}
    per_seed: dict[str, int] = {}
    for seed_id in chunk:
        seed = stored.get(seed_id)
        if seed is None or seed.vector is None:
            result.add("seeds_without_vector", 1)
            continue
        hits = vectors.search(VectorQuery(seed.vector, NEIGHBOURS_FETCHED + 1, Scope(excluded_types=s.excluded_types)))
        for hit in hits:
            if hit.memory_id == seed_id or not (s.consolidation_creative_min_similarity <= hit.score < s.consolidation_creative_max_similarity):
                continue
            if s.consolidation_creative_cross_scope and _share_tag(seed.payload, hit.payload):
                continue
            pair = frozenset((seed_id, hit.memory_id))
            if pair in proposals or per_seed.get(seed_id, 0) >= s.consolidation_creative_links_per_memory:
                continue
            proposals[pair] = {"a": seed_id, "b": hit.memory_id, "strength": round(hit.score, 6)}
            per_seed[seed_id] = per_seed.get(seed_id, 0) + 1
    result.add("seeds", len(chunk))
    connected = store_call(graph_ops.connected_pairs)(
        ctx.services.graph, [(p["a"], p["b"]) for p in proposals.values()], ctx.run.id
    )
    links = [p for pair, p in proposals.items() if pair not in connected]
    result.add("already_connected", len(proposals) - len(links))
    result.count("discovered", [f"{p['a']}->{p['b']}" for p in links])
    if links and not ctx.dry_run:
        store_call(link_discovered)(ctx.services.graph, links, iso(ctx.now), ctx.run.id)
    return result


PHASES = [Phase("discover", VECTORS, creative_step)]
