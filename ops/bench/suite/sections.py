"""The suite's sections: which benchmark, with which arguments, writing which JSON.

Full-size arguments follow issues 6 and 7 (ingestion of a 100k-message export with the hash
provider and with the local model, recall at 10k and 100k, maintenance over 100k); ``quick``
keeps every section but at small sizes (about 2k memories, no local-model ingestion at
scale), so the whole suite runs in minutes. Arguments are those
of each benchmark's own command line: change a benchmark's CLI, change its line here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ops.bench.suite import figures


@dataclass(frozen=True)
class Section:
    name: str
    title: str
    module: str
    full_args: tuple[str, ...]
    quick_args: tuple[str, ...]
    globs: tuple[str, ...]  # the JSON it writes under ops/bench/results/ (newest wins)
    read: Callable[[dict], dict]
    ratios: Callable[[dict], dict] = figures.no_ratios
    full_timeout_s: int = 4 * 3600
    quick_timeout_s: int = 1800
    env: dict[str, str] = field(default_factory=dict)

    def command(self, quick: bool) -> list[str]:
        return ["-m", self.module, *(self.quick_args if quick else self.full_args)]


SECTIONS: tuple[Section, ...] = (
    Section(
        "ingest", "Ingestion, accepted → recallable", "ops.bench.ingest",
        # The local model at 100k is ~20 min a configuration here: the model is the limit, and
        # its own rate is measured over the export's first 4,000 texts (--raw-model-texts).
        full_args=("--messages", "100000", "--local-messages", "100000", "--singles", "10000",
                   "--providers", "hash,local", "--workers", "1,2"),
        quick_args=("--messages", "2000", "--local-messages", "200", "--singles", "1000", "--small", "1000",
                    "--providers", "hash,local", "--workers", "1,2"),
        globs=("bench_ingest.json", "bench_ingest-*.json"),
        read=figures.ingest, ratios=figures.ingest_ratios, full_timeout_s=6 * 3600,
    ),
    Section(
        "latency", "Accepted → recallable at idle", "ops.bench.latency",
        full_args=("--writes", "3000", "--latency-samples", "300"), quick_args=("--quick",),
        globs=("bench_latency.json", "bench_latency-*.json"),
        read=figures.latency, ratios=figures.latency_ratios,
    ),
    Section(
        "recall", "Recall latency", "ops.bench.recall",
        full_args=("--sizes", "10000,100000", "--queries", "200"),
        # Two sizes ten times apart, as 10k and 100k are: the ratio stays comparable.
        quick_args=("--sizes", "200,2000", "--queries", "50"),
        globs=("bench_recall.json", "bench_recall-*.json"),
        read=figures.recall, ratios=figures.recall_ratios,
    ),
    Section(
        "maintenance", "Consolidation and sync", "ops.bench.maintenance",
        # --no-optimize: the HNSW build after loading would dominate the run and measures Qdrant, not the cycles
        full_args=("--memories", "100000", "--no-optimize"), quick_args=("--memories", "2000", "--no-optimize"),
        globs=("bench_maintenance_*.json", "bench_maintenance-*.json"),  # one size per file (bench_maintenance.json gathers every size)
        read=figures.maintenance,
    ),
    Section(
        "quality", "Retrieval quality (LoCoMo dev, REALTALK dev)", "ops.bench.quality",
        full_args=(), quick_args=("--limit-conversations", "1"),
        globs=("bench_quality.json", "bench_quality-*.json"),
        read=figures.quality,
    ),
    Section(
        "enrich", "Enrichment throughput", "ops.bench.enrich",
        full_args=("--limit", "3000"), quick_args=("--limit", "300"),
        globs=("bench_enrich.json", "bench_enrich-*.json"),
        read=figures.enrich,
    ),
    Section(
        "lifecycle", "A user's lifecycle: real text, the local model, stop and restart", "ops.bench.lifecycle",
        # the real dev exports topped up to 100k with real texts; the model is the limit (about an hour here)
        full_args=("--memories", "100000", "--singles", "1500"),
        quick_args=("--exports", "houstondatavis", "--singles", "200", "--raw-texts", "300"),
        globs=("bench_lifecycle.json",),
        read=figures.lifecycle, full_timeout_s=8 * 3600,
    ),
    Section(
        "growth", "Growth (hash embedder, real texts cycled)", "ops.bench.lifecycle",
        full_args=("--growth", "10000,100000,1000000"), quick_args=("--growth", "500,2000"),
        globs=("bench_lifecycle_growth.json",),
        read=figures.growth, full_timeout_s=12 * 3600,
    ),
    Section(
        "rss", "Peak RSS of the web and worker processes", "ops.bench.suite.rss",
        full_args=(), quick_args=("--quick",),
        globs=("bench_rss.json",),
        read=figures.rss,
    ),
)

BY_NAME = {s.name: s for s in SECTIONS}
