"""The web's one-worker-per-queue start logs no warning; other duplicate middleware still warns."""

import logging

import dramatiq
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import Retries

from api.app import quiet_workers_sharing


def test_workers_sharing_a_broker_start_quietly_but_a_real_duplicate_still_warns(caplog):
    broker = StubBroker()
    quiet_workers_sharing(broker)
    quiet_workers_sharing(broker)  # idempotent: one filter
    workers = [dramatiq.Worker(broker, queues={queue}, worker_threads=1) for queue in ("a", "b", "c")]
    with caplog.at_level(logging.WARNING):
        for worker in workers:
            worker.start()
        broker.add_middleware(Retries())
    for worker in workers:
        worker.stop()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not any("_WorkerMiddleware" in m for m in warnings), warnings
    assert any("Retries" in m and "twice" in m for m in warnings), warnings
