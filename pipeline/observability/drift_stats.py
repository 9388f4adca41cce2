"""Drift between the graph and the vector index, as the last sync run found it, at scrape time."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Callable


class DriftCollector:
    """Exports the last finished sync's counts by kind (``mempipe_drift_memories{kind=…}``)."""

    def __init__(self, last_sync: Callable[[], dict[str, Any] | None]):
        self._last_sync = last_sync

    def describe(self):
        return []  # computed at scrape

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        from pipeline.maintenance.sync import DRIFT_KINDS

        drift = GaugeMetricFamily(
            "mempipe_drift_memories", "Drift found by the last sync run, by kind (dry runs included).", labels=["kind"]
        )
        finished = GaugeMetricFamily("mempipe_drift_last_sync_timestamp_seconds", "When the last sync run finished.")
        try:
            last = self._last_sync()
        except Exception:  # the broker being down is reported by mempipe_broker_up
            last = None
        if last is None:
            return
        counts = last.get("counts") or {}
        for kind in DRIFT_KINDS:
            drift.add_metric([kind], float(counts.get(kind, 0)))
        yield drift
        if last.get("finished_at"):
            finished.add_metric([], datetime.fromisoformat(last["finished_at"]).timestamp())
            yield finished


class SyncGuardCollector:
    """Exports whether the sync guard holds orphan deletes back, and the quarantine's size."""

    def __init__(self, broker_redis: Callable[[], Any]):
        self._broker_redis = broker_redis

    def describe(self):
        return []  # computed at scrape

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        from pipeline.maintenance.quarantine import Quarantine
        from pipeline.maintenance.sync_guard import GuardState

        try:
            client = self._broker_redis()
            tripped = GuardState(client).read()
            quarantined = Quarantine(client).count()
        except Exception:  # the broker being down is reported by mempipe_broker_up
            return
        guard = GaugeMetricFamily(
            "mempipe_sync_guard_tripped",
            "1 while sync refuses to delete orphan vectors (empty graph or too many orphans; see /health drift.sync_guard).",
        )
        guard.add_metric([], 1.0 if tripped else 0.0)
        yield guard
        orphans = GaugeMetricFamily("mempipe_sync_guard_orphans", "Orphan vectors the refused sync found (0 when not tripped).")
        orphans.add_metric([], float(tripped["orphans"]) if tripped else 0.0)
        yield orphans
        held = GaugeMetricFamily("mempipe_sync_quarantined_points", "Vector points sync quarantined before deleting them (recoverable).")
        held.add_metric([], float(quarantined))
        yield held
