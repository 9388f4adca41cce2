"""The benchmarks' model-alone runs: side-by-side processes are timed together."""

from __future__ import annotations

import pytest

from ops.bench.model_alone import model_run_in_processes
from pipeline.config import Settings

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_the_model_in_processes_side_by_side_counts_every_text_over_the_slowest_process():
    settings = Settings(embed_batch_size=4)
    texts = [f"memory number {i} about the billing service and its {i % 7} databases" for i in range(30)]
    run = model_run_in_processes(texts, settings, processes=2)
    assert run["processes"] == 2
    assert run["texts"] == 30  # every call dealt to one process or the other, none twice
    assert run["rate"] == pytest.approx(30 / run["seconds"], rel=0.02)
    assert run["torch_threads"] >= 1 and run["cpu_ms_per_text"] > 0
