"""Per-actor metrics for every process that runs actors, and the worker-side exporter.

Why not Dramatiq's own ``Prometheus`` middleware: it only works in processes started by the
``dramatiq`` command (it sets up at ``process_boot``, into a private registry), but in the
embedded default the vector stage runs inside the web process, whose ``/metrics`` must show
it. ``ActorMetrics`` records the same metrics under the same names in both places:

- web process: into the default registry, served by ``/metrics``.
- ``dramatiq`` worker command: at process boot each worker process switches prometheus_client
  to multiprocess mode (files under ``WORKER_METRICS_DIR/<pid of the dramatiq command>``), and a
  Dramatiq *fork* serves them all on ``WORKER_METRICS_HOST:WORKER_METRICS_PORT``, one exporter
  per worker command (per container or dyno), which is what Prometheus scrapes.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Callable

from dramatiq import Middleware

from pipeline.config import Settings, get_settings
from pipeline.observability.metrics import PipelineMetrics, process_metrics

log = logging.getLogger("mempipe.metrics")


def multiprocess_dir(settings: Settings, command_pid: int) -> Path:
    return settings.worker_metrics_dir / str(command_pid)


class ActorMetrics(Middleware):
    def __init__(self, settings: Settings, metrics: Callable[[], PipelineMetrics] = process_metrics):
        self._settings = settings
        self._metrics = metrics  # resolved on first use: after process boot in a worker
        self._started: dict[str, float] = {}
        self._multiprocess_dir: Path | None = None

    @property
    def forks(self):
        return [serve_worker_metrics] if self._settings.worker_metrics_port else []

    def after_process_boot(self, broker):
        # Emitted only by the ``dramatiq`` command, in each worker process, before any actor
        # ran and before anything imported prometheus_client (which reads this variable once).
        if self._settings.worker_metrics_port:
            path = multiprocess_dir(self._settings, os.getppid())
            path.mkdir(parents=True, exist_ok=True)
            os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(path)
            self._multiprocess_dir = path
        self._metrics()  # build them now, so the first message does not pay for it

    def after_worker_shutdown(self, broker, worker):
        if self._multiprocess_dir is not None:
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(os.getpid(), str(self._multiprocess_dir))

    def _labels(self, message) -> tuple[str, str]:
        return message.queue_name, message.actor_name

    def after_nack(self, broker, message):
        self._metrics().message_rejects.labels(*self._labels(message)).inc()

    def after_enqueue(self, broker, message, delay):
        if "retries" in message.options:
            self._metrics().message_retries.labels(*self._labels(message)).inc()

    def before_process_message(self, broker, message):
        self._metrics().messages_inprogress.labels(*self._labels(message)).inc()
        self._started[message.message_id] = time.monotonic()

    def after_process_message(self, broker, message, *, result=None, exception=None):
        metrics, labels = self._metrics(), self._labels(message)
        started = self._started.pop(message.message_id, None)
        if started is not None:
            metrics.message_duration.labels(*labels).observe((time.monotonic() - started) * 1000)
            metrics.messages_inprogress.labels(*labels).dec()
        metrics.messages.labels(*labels).inc()
        if exception is not None:
            metrics.message_errors.labels(*labels).inc()

    def after_skip_message(self, broker, message):
        self.after_process_message(broker, message)


def serve_worker_metrics() -> int:
    """A Dramatiq fork: serve the metrics of this ``dramatiq`` command's worker processes."""
    settings = get_settings()
    path = multiprocess_dir(settings, os.getppid())
    path.mkdir(parents=True, exist_ok=True)
    from prometheus_client import CollectorRegistry, start_http_server
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(path))
    try:
        start_http_server(settings.worker_metrics_port, addr=settings.worker_metrics_host, registry=registry)
    except OSError as exc:
        # A busy port must not take the workers down with it: they keep processing.
        log.error("worker metrics exporter could not bind %s:%s (%s)", settings.worker_metrics_host, settings.worker_metrics_port, exc)
        return 1
    log.info("worker metrics on %s:%s", settings.worker_metrics_host, settings.worker_metrics_port)
    threading.Event().wait()
    return 0
