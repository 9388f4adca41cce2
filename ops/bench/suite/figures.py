"""Each benchmark's JSON turned into the few figures the report shows (pure functions).

The benchmarks belong to their own modules and their JSON may grow; these readers take only
what the report needs and tolerate missing keys, so a benchmark can change without breaking
the suite (a figure it no longer writes shows as "–").
"""

from __future__ import annotations

from typing import Any


def _ratio(numerator: Any, denominator: Any, digits: int = 2) -> float | None:
    if not isinstance(numerator, (int, float)) or not isinstance(denominator, (int, float)) or not denominator:
        return None
    return round(numerator / denominator, digits)


def latency(data: dict) -> dict:
    results = data.get("results") or []
    idle = next((r["idle_latency"] for r in results if r.get("idle_latency")), {})
    throughput = [
        {"workers": r.get("worker_processes"), "provider": r.get("provider"), "writes": r["throughput"].get("writes"),
         "clients": r["throughput"].get("clients"), "accepted_per_s": r["throughput"].get("accept_rate_per_s"),
         "recallable_per_s": r["throughput"].get("recallable_rate_per_s")}
        for r in results if r.get("throughput")
    ]
    return {"idle": {k: idle.get(k) for k in ("samples", "recallable_201", "p50_ms", "p95_ms", "p99_ms", "max_ms")},
            "single_writes": throughput}


def latency_ratios(figures: dict) -> dict:
    rates = {row["workers"]: row["recallable_per_s"] for row in figures.get("single_writes", [])}
    return {"single_writes_2_over_1_workers": _ratio(rates.get(2), rates.get(1))}


def ingest(data: dict) -> dict:
    rows = []
    for row in data.get("rows") or []:
        batch, single = row.get("batch") or {}, row.get("single") or {}
        rows.append({
            "provider": row.get("provider"), "workers": row.get("workers"),
            "batch_messages": batch.get("imported", batch.get("messages")), "batch_rate": batch.get("rate"),
            "importer_peak_rss_mib": batch.get("importer_peak_rss_mib"),
            "single_writes": single.get("writes"), "single_rate": single.get("rate"),
            # bench_ingest measures the model alone beside each local row (same run, same load)
            "raw_model_rate": (row.get("raw_model") or {}).get("rate"),
        })
    raw = data.get("raw_model") or next((r["raw_model"] for r in data.get("rows") or [] if r.get("raw_model")), {})
    small = data.get("importer_rss_small") or {}  # the same importer on a smaller export: its RSS must not grow with size
    return {"rows": rows, "raw_model_rate": raw.get("rate"), "raw_model_texts": raw.get("texts"),
            "importer_rss_small_mib": small.get("importer_peak_rss_mib"), "importer_rss_small_messages": small.get("messages")}


def ingest_ratios(figures: dict) -> dict:
    """2 workers ÷ 1 per provider and path, and the local pipeline ÷ the local model alone."""
    ratios: dict[str, float | None] = {}
    by = {(r["provider"], r["workers"]): r for r in figures.get("rows", [])}
    for provider in sorted({p for p, _ in by}):
        one, two = by.get((provider, 1), {}), by.get((provider, 2), {})
        for path in ("batch", "single"):
            value = _ratio(two.get(f"{path}_rate"), one.get(f"{path}_rate"))
            if value is not None:
                ratios[f"{provider}_{path}_2_over_1_workers"] = value
    raw = figures.get("raw_model_rate")
    for (provider, workers), row in sorted(by.items()):
        if provider == "local":
            ratios[f"local_batch_{workers}_workers_over_raw_model"] = _ratio(
                row.get("batch_rate"), row.get("raw_model_rate") or raw, 3)
    return ratios


RECALL_SCENARIOS = {
    "a_plain": "plain", "b_tag_scoped": "tag-scoped",
    "c_expand_relations": "expand_relations", "d_expand_entities": "expand_entities",
}
PERCENTILES = ("p50", "p95", "p99")


def recall(data: dict) -> dict:
    sizes = {}
    for size, scenarios in sorted((data.get("results") or {}).items(), key=lambda kv: int(kv[0])):
        sizes[str(size)] = {
            name: {f"{side}_{p}": round(r[f"{side}_{p}"], 2) for side in ("server", "client") for p in PERCENTILES
                   if isinstance(r.get(f"{side}_{p}"), (int, float))}
            for name, r in scenarios.items()
        }
    return {"queries": data.get("queries_per_scenario"), "sizes": sizes, "load": data.get("load") or {}}


def recall_ratios(figures: dict) -> dict:
    """Largest size ÷ smallest, per scenario (p50 server side): growth with the store's size."""
    sizes = list(figures.get("sizes", {}))
    if len(sizes) < 2:
        return {}
    small, large = figures["sizes"][sizes[0]], figures["sizes"][sizes[-1]]
    ratios = {}
    for name in large:
        for key in ("server_p50", "server_p95"):
            value = _ratio(large[name].get(key), small.get(name, {}).get(key))
            if value is not None:
                ratios[f"{name}_{key}_{sizes[-1]}_over_{sizes[0]}"] = value
    return ratios


def maintenance(data: dict) -> dict:
    return {
        "memories": data.get("memories"), "page_size": data.get("page_size"), "load_s": data.get("load_seconds"),
        "cycles": [{k: c.get(k) for k in ("cycle", "seconds", "memories_per_s", "rss_before_mb", "peak_rss_mb")}
                   for c in data.get("cycles") or []],
    }


def quality(data: dict) -> dict:
    if "corpora" in data:  # one store per corpus (issue 23): the idle pass, the after-write pass, the cost
        return {"settings": data.get("settings"), "corpora": [{
            "corpus": c.get("corpus"), "conversations": len(c.get("conversations") or []), "memories": c.get("memories"),
            "questions": (c.get("idle") or {}).get("questions"), "summary": (c.get("idle") or {}).get("summary") or {},
            "after_write": ((c.get("after_write") or {}).get("summary") or {}).get("overall"),
            "texts_per_memory": (c.get("embedded") or {}).get("texts_per_memory"),
            "cpu_ms_per_memory": c.get("cpu_ms_per_memory") or {},
            "recall_p50_ms": (c.get("idle") or {}).get("recall_p50_ms"),
            "recall_p95_ms": (c.get("idle") or {}).get("recall_p95_ms"),
        } for c in data["corpora"]]}
    return {k: data.get(k) for k in ("memories", "questions", "provider", "ingest_seconds", "mean_recall_ms", "settings")} | {
        "conversations": len(data.get("conversations") or []), "summary": data.get("summary") or {}}


def enrich(data: dict) -> dict:
    return {
        "threads": data.get("threads"),
        "runs": [{k: r.get(k) for k in ("label", "entities", "memories", "memories_per_s", "idle_bound_per_s")}
                 | {"cpu_ms_per_memory": (r.get("cpu_ms_per_memory") or {}).get("total")} for r in data.get("runs") or []],
        "ner_alone_per_s": (data.get("ner_alone") or {}).get("memories_per_s"),
        "ner_alone_cpu_ms": (data.get("ner_alone") or {}).get("cpu_ms_per_memory"),
    }


def rss(data: dict) -> dict:
    return {k: data.get(k) for k in ("provider", "load", "processes")}


# The use run's phases, in the order ops.bench.lifecycle runs them; "_probed": with recall every 100 ms.
PHASES = ("import", "import_probed", "singles", "singles_probed")


def phase_memories(row: dict) -> int:
    """Memories a phase wrote (older files: the import's ``imported`` and ``topped_up``)."""
    if "writes" in row:
        return row["writes"]
    return row["memories"] if "memories" in row else row.get("imported", 0) + row.get("topped_up", 0)


def lifecycle(data: dict) -> dict:
    phases, probes = data.get("phases") or {}, data.get("probes") or {}
    models = data.get("raw_model") or {}
    rows = []
    for name in PHASES:
        if name.endswith("_probed") and name not in phases:
            continue  # older files: the import and the singles ran with the prober on
        phase = phases.get(name) or {}
        model = models.get(name) or models  # older files: one rate for both phases
        sorted_rate = (model.get("length_sorted") or {}).get("rate")
        worker_rate = (model.get("as_worker_calls") or {}).get("rate")  # older files: not measured
        recall, health = (probes.get(name) or {}).get("recall") or {}, (probes.get(name) or {}).get("health") or {}
        count = phase_memories(phase)
        rows.append({"phase": name, "memories": count, "rate": phase.get("rate"), "model_rate": model.get("rate"),
                     "over_model": _ratio(phase.get("rate"), model.get("rate")),
                     "model_sorted_rate": sorted_rate, "over_model_sorted": _ratio(phase.get("rate"), sorted_rate),
                     "model_worker_rate": worker_rate, "over_model_worker": _ratio(phase.get("rate"), worker_rate),
                     "recall_p99_ms": recall.get("p99_ms"), "recall_max_ms": recall.get("max_ms"),
                     "health_max_ms": health.get("max_ms"),
                     "probe_errors": (recall.get("errors") or 0) + (health.get("errors") or 0)})
    restarts = [{k: r.get(k) for k in ("how", "stop_s", "orphans", "restart_s", "memories_before", "memories_after")}
                | {"log_errors": len(r.get("log_errors") or [])} for r in data.get("restarts") or []]
    return {"rows": rows, "restarts": restarts,
            "background_after_last_write_s": phases.get("background_after_last_write_s"),
            "start_log_errors": len(data.get("start_log_errors") or []), "clients": (phases.get("singles") or {}).get("clients")}


def growth(data: dict) -> dict:
    rows = []
    for r in data.get("rows") or []:
        plain, tagged = r.get("recall_plain") or {}, r.get("recall_tagged") or {}
        rss = r.get("web_rss_mb")
        rss = rss if isinstance(rss, dict) else {"VmRSS": rss}  # older files: one figure, VmRSS
        rows.append({"memories": r.get("memories"), "plain_p50_ms": plain.get("p50_ms"), "plain_p95_ms": plain.get("p95_ms"),
                     "tagged_p50_ms": tagged.get("p50_ms"), "tagged_p95_ms": tagged.get("p95_ms"),
                     "web_rss_mb": rss.get("VmRSS"), "web_rss_anon_mb": rss.get("RssAnon"),
                     "restart_s": (r.get("restart") or {}).get("restart_s"),
                     "cycles": {m: (c or {}).get("duration_s") for m, c in (r.get("consolidation") or {}).items()},
                     "error": r.get("error")})
    return {"provider": data.get("provider"), "rows": rows}


def no_ratios(_figures: dict) -> dict:
    return {}
