"""Writes that exhausted their retries (``pipeline.write_failures``), read from Redis at scrape."""

from __future__ import annotations

from typing import Any, Callable


class FailedWritesCollector:
    """Exports ``mempipe_failed_writes``: memories whose write waits in the dead-letter queue."""

    def __init__(self, broker_redis: Callable[[], Any]):
        self._broker_redis = broker_redis

    def describe(self):
        return []  # computed at scrape

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        from pipeline.tracking import PipelineTracker

        try:
            count = PipelineTracker(self._broker_redis()).failed_count()
        except Exception:  # the broker being down is reported by mempipe_broker_up
            return
        failed = GaugeMetricFamily(
            "mempipe_failed_writes",
            "Memories whose write exhausted its retries: not recallable, replayable from the dead-letter queue.",
        )
        failed.add_metric([], float(count))
        yield failed
