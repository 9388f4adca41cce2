"""A worker loads at boot the models its queues need, and only those."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from dramatiq.brokers.stub import StubBroker

from pipeline.actor_context import ActorContext
from pipeline.broker import PreloadModels
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
        preload = PreloadModels()
        preload.before_worker_boot(broker, worker)
        preload.after_worker_boot(broker, worker)
        broker.close()
        return services.built
    return boot


@pytest.mark.parametrize("queues, loaded", [
    ({"persist", "embed", "maintenance"}, ["embedder"]),  # the write-path worker
    ({"enrich"}, ["entity_extractor"]),  # the enrichment worker
    ({"vectors"}, []),  # the web's vector writer
    ({"similarity"}, []),
    (None, ["embedder", "entity_extractor"]),  # a worker of every queue
])
def test_a_worker_loads_the_models_of_its_queues_at_boot(booted, queues, loaded):
    assert booted(queues) == loaded

