"""Observability shared by every process: request ids, JSON logs, Prometheus metrics.

Nothing here imports ``prometheus_client`` at import time. A Dramatiq worker process has to
switch prometheus_client into multiprocess mode (an environment variable read when
prometheus_client is first imported) at process boot, after ``pipeline.actors`` is imported;
``tests/unit/test_observability.py`` guards that.
"""
