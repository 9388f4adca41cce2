"""Which vector collection is live, and which one a dimension migration is building.

Kept in the broker's Redis (``mempipe:vectors:collections:<QDRANT_COLLECTION>``), so the web
process and every worker agree:

- ``live``: the collection every read uses and every write goes to, with the embedding it was
  built with (provider, model, dimensions) — recall embeds its queries with that, so it keeps
  working when the configuration already names another size.
- ``target``: while ``POST /admin/reembed`` migrates to a new dimension, the collection being
  built (a versioned name, ``<base>-v<n>-<dims>d``). Every write goes to both (the embed stage
  embeds with both embeddings; deletes and payload changes fan out), so nothing written
  meanwhile is missing from either; reads stay on ``live``.
- the switch makes the target live in one ``HSET`` once every memory is in it; the old
  collection is dropped a little later (the graph is the record: going back is another
  migration).

A first start records the configured collection as live. A change of provider or model at the
same dimension keeps the collection and follows the configuration (re-embed in place with
``force``); a change of dimension waits for the migration.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import orjson
import redis

from pipeline.config import Settings
from pipeline.embedding import provider_dimensions

KEY_PREFIX = "mempipe:vectors:collections:"
CACHE_SECONDS = 1.0  # how stale a process's view may be; writes fan out during a migration anyway


@dataclass(frozen=True)
class CollectionSpec:
    name: str
    dims: int
    provider: str
    model: str | None = None

    def to_json(self) -> bytes:
        return orjson.dumps(asdict(self))

    @classmethod
    def from_json(cls, raw: bytes | str | None) -> "CollectionSpec | None":
        if not raw:
            return None
        data = orjson.loads(raw)
        return cls(data["name"], int(data["dims"]), data["provider"], data.get("model"))

    def embedding_settings(self, settings: Settings) -> Settings:
        """The settings that build this collection's embedder."""
        return settings.model_copy(update={"embedding_provider": self.provider, "embedding_model": self.model,
                                           "vector_size": self.dims})


@dataclass(frozen=True)
class CollectionState:
    live: CollectionSpec
    target: CollectionSpec | None = None
    target_run: str | None = None

    @property
    def writable(self) -> list[CollectionSpec]:
        return [self.live] + ([self.target] if self.target else [])


def configured_spec(settings: Settings, name: str | None = None) -> CollectionSpec:
    provider = settings.resolved_embedding_provider
    return CollectionSpec(name or settings.qdrant_collection, provider_dimensions(settings), provider,
                          settings.embedding_model if provider == "openai" else None)


def versioned_name(base: str, generation: int, dims: int) -> str:
    return f"{base}-v{generation}-{dims}d"


class CollectionRegistry:
    def __init__(self, client: redis.Redis, settings: Settings, cache_seconds: float = CACHE_SECONDS):
        self._redis = client
        self._settings = settings
        self._key = KEY_PREFIX + settings.qdrant_collection
        self._cache_seconds = cache_seconds
        self._cached: tuple[float, CollectionState] | None = None

    @property
    def key(self) -> str:
        return self._key

    def state(self, fresh: bool = False) -> CollectionState:
        now = time.monotonic()
        if not fresh and self._cached and now - self._cached[0] < self._cache_seconds:
            return self._cached[1]
        raw = self._redis.hgetall(self._key)
        live = CollectionSpec.from_json(raw.get(b"live"))
        if live is None:
            live = configured_spec(self._settings)
            self._redis.hsetnx(self._key, "live", live.to_json())  # first start: what is configured
            live = CollectionSpec.from_json(self._redis.hget(self._key, "live"))
        configured = configured_spec(self._settings, live.name)
        if configured.dims == live.dims:
            live = configured  # same size: follow the configured provider (re-embed in place)
        target = CollectionSpec.from_json(raw.get(b"target"))
        run = raw.get(b"target_run")
        state = CollectionState(live, target, run.decode() if run else None)
        self._cached = (now, state)
        return state

    def migration_needed(self) -> bool:
        return configured_spec(self._settings).dims != self.state(fresh=True).live.dims

    def plan_target(self, run_id: str) -> CollectionSpec:
        """The collection a migration run builds: the configured embedding, a new versioned name.

        Idempotent per run: a redelivered step gets the same target.
        """
        state = self.state(fresh=True)
        if state.target is not None and state.target_run == run_id:
            return state.target
        generation = int(self._redis.hincrby(self._key, "generation", 1))
        base = self._settings.qdrant_collection
        target = configured_spec(self._settings, versioned_name(base, generation, provider_dimensions(self._settings)))
        self._redis.hset(self._key, mapping={"target": target.to_json(), "target_run": run_id})
        self._cached = None
        return target

    def switch(self, run_id: str) -> CollectionSpec | None:
        """Make the run's target live (once); the collection that was live, to drop. None if not ours."""
        def swap(pipe) -> bytes | None:  # WATCHed: only the run that owns the target, and only once
            run = pipe.hget(self._key, "target_run")
            if run is None or run.decode() != run_id:
                return None
            previous, target = pipe.hmget(self._key, "live", "target")
            pipe.multi()
            pipe.hset(self._key, "live", target)
            pipe.hdel(self._key, "target", "target_run")
            return previous

        previous = self._redis.transaction(swap, self._key, value_from_callable=True)
        self._cached = None
        return CollectionSpec.from_json(previous) if previous else None

    def abandon(self, run_id: str) -> CollectionSpec | None:
        """Forget a failed run's target (writes stop going to it); the target, to drop."""
        state = self.state(fresh=True)
        if state.target_run != run_id:
            return None
        self._redis.hdel(self._key, "target", "target_run")
        self._cached = None
        return state.target

    def describe(self) -> dict[str, Any]:
        state = self.state(fresh=True)
        configured = configured_spec(self._settings)
        view: dict[str, Any] = {"live": asdict(state.live), "configured_dims": configured.dims,
                                "migration_needed": configured.dims != state.live.dims}
        if state.target:
            view["migrating_to"] = {**asdict(state.target), "run_id": state.target_run}
        return view

