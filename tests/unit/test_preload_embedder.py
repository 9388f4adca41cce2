"""A worker that consumes the embed queue loads its embedding model at boot; others load none."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from dramatiq.brokers.stub import StubBroker

from pipeline.actor_context import ActorContext
from pipeline.broker import PreloadEmbedder
from pipeline.config import Settings


class RecordingServices:
    """Services whose model properties record that they were built."""

    def __init__(self):
        self.settings = Settings(embedding_provider="hash")
        self.built: list[str] = []

    @property
    def embedder(self):
        self.built.append("embedder")
        return object()

    @property
    def entity_extractor(self):
        self.built.append("entity_extractor")
        return object()


@pytest.fixture()
def booted():
    def boot(queues: set[str] | None) -> list[str]:
        services = RecordingServices()
        broker = StubBroker(middleware=[ActorContext(services)])
        worker = SimpleNamespace(consumer_whitelist=queues)
        preload = PreloadEmbedder()
        preload.before_worker_boot(broker, worker)
        preload.after_worker_boot(broker, worker)
        broker.close()
        return services.built
    return boot


@pytest.mark.parametrize("queues, loaded", [
    ({"persist", "embed", "maintenance"}, ["embedder"]),  # the write-path worker
    # The enrichment worker builds spaCy on its first message, not at boot: a load at boot ran
    # beside the web's start and cost a restart ~0.8 s to healthy (benchmarks log, session 28).
    ({"enrich"}, []),
    ({"vectors"}, []),  # the web's vector writer
    ({"similarity"}, []),
    (None, ["embedder"]),  # a worker of every queue
])
def test_a_worker_loads_the_embedding_model_at_boot_only_for_the_embed_queue(booted, queues, loaded):
    assert booted(queues) == loaded
