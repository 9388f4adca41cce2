"""The pipeline's Prometheus metrics, and the thin proxies that feed them.

One ``PipelineMetrics`` per process, on prometheus_client's default registry
(``process_metrics()``), built on first use. In a Dramatiq worker process that first use
comes after process boot, when ``ActorMetrics`` has switched prometheus_client to
multiprocess mode, so all of a worker command's processes are exported together.

Per-actor metrics keep the names and labels of Dramatiq's own Prometheus middleware
(``dramatiq_messages_total`` and friends), so existing Dramatiq dashboards work unchanged.
"""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Any

import numpy as np

from pipeline.tokens import estimate_tokens

# Milliseconds, as Dramatiq's middleware buckets them.
ACTOR_DURATION_BUCKETS_MS = (5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000, 30000, 60000, 600000)
STORE_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
EMBED_BUCKETS_S = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class PipelineMetrics:
    def __init__(self, registry: Any = None):
        import prometheus_client as prom  # see the package docstring: never at import time

        registry = registry if registry is not None else prom.REGISTRY
        actor = ["queue_name", "actor_name"]
        self.messages = prom.Counter("dramatiq_messages", "Messages processed.", actor, registry=registry)
        self.message_errors = prom.Counter("dramatiq_message_errors", "Messages whose actor raised.", actor, registry=registry)
        self.message_retries = prom.Counter("dramatiq_message_retries", "Messages re-enqueued for a retry.", actor, registry=registry)
        self.message_rejects = prom.Counter("dramatiq_message_rejects", "Messages moved to the dead-letter queue.", actor, registry=registry)
        self.messages_inprogress = prom.Gauge(
            "dramatiq_messages_inprogress", "Messages being processed now.", actor, registry=registry, multiprocess_mode="livesum"
        )
        self.message_duration = prom.Histogram(
            "dramatiq_message_duration_milliseconds", "Time spent processing a message.", actor,
            buckets=ACTOR_DURATION_BUCKETS_MS, registry=registry,
        )
        self.store_seconds = prom.Histogram(
            "mempipe_store_operation_seconds", "Latency of graph and vector store calls.", ["store", "operation"],
            buckets=STORE_BUCKETS_S, registry=registry,
        )
        self.store_errors = prom.Counter(
            "mempipe_store_errors", "Store calls that raised.", ["store", "operation"], registry=registry
        )
        self.embedding_calls = prom.Counter("mempipe_embedding_calls", "Calls to the embedding provider.", ["provider"], registry=registry)
        self.embedding_texts = prom.Counter("mempipe_embedding_texts", "Texts embedded.", ["provider"], registry=registry)
        self.embedding_tokens = prom.Counter(
            "mempipe_embedding_tokens",
            "Tokens sent to the embedding provider (reported by openai; estimated at 4 characters a token otherwise).",
            ["provider"], registry=registry,
        )
        self.embedding_errors = prom.Counter("mempipe_embedding_errors", "Embedding calls that raised.", ["provider"], registry=registry)
        self.embedding_seconds = prom.Histogram(
            "mempipe_embedding_seconds", "Latency of one embedding call.", ["provider"], buckets=EMBED_BUCKETS_S, registry=registry
        )


@lru_cache(maxsize=1)
def process_metrics() -> PipelineMetrics:
    """The process's metrics, on the default registry (built once, on first use)."""
    return PipelineMetrics()


class InstrumentedStore:
    """A store whose method calls are timed into ``mempipe_store_operation_seconds``.

    Attributes that are not callables (``backend``, ...) pass through untouched.
    """

    def __init__(self, inner: Any, store: str, metrics: PipelineMetrics):
        self._inner = inner
        self._store = store
        self._metrics = metrics

    @property
    def wrapped(self) -> Any:
        return self._inner

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr) or name.startswith("_"):
            return attr
        metrics, store = self._metrics, self._store

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return attr(*args, **kwargs)
            except Exception:
                metrics.store_errors.labels(store, name).inc()
                raise
            finally:
                metrics.store_seconds.labels(store, name).observe(time.perf_counter() - started)

        return timed


class InstrumentedEmbedder:
    """An embedder whose calls, texts and tokens are counted.

    Tokens are what the provider reports when it offers ``embed_with_usage`` (openai);
    otherwise an estimate of one token per four characters.
    """

    def __init__(self, inner: Any, metrics: PipelineMetrics):
        self._inner = inner
        self._metrics = metrics
        self.name = inner.name
        self.dimensions = inner.dimensions
        self.semantic = inner.semantic

    @property
    def wrapped(self) -> Any:
        return self._inner

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self._counted(texts, f32=False)

    def embed_f32(self, texts: list[str]) -> Any:
        """As ``pipeline.embedding.embed_f32``: a float32 matrix, counted like ``embed``."""
        return self._counted(texts, f32=True)

    def _counted(self, texts: list[str], f32: bool) -> Any:
        from pipeline.embedding import embed_f32

        m, provider = self._metrics, self.name
        started = time.perf_counter()
        try:
            with_usage = getattr(self._inner, "embed_with_usage", None)
            if with_usage is not None:
                vectors, tokens = with_usage(texts)
                if f32:
                    vectors = np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)
            elif f32:
                vectors, tokens = embed_f32(self._inner, texts), None
            else:
                vectors, tokens = self._inner.embed(texts), None
        except Exception:
            m.embedding_errors.labels(provider).inc()
            raise
        finally:
            m.embedding_seconds.labels(provider).observe(time.perf_counter() - started)
        if tokens is None:
            tokens = sum(estimate_tokens(text) for text in texts)  # the provider reported no usage
        m.embedding_calls.labels(provider).inc()
        m.embedding_texts.labels(provider).inc(len(texts))
        m.embedding_tokens.labels(provider).inc(tokens)
        return vectors
