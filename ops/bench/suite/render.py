"""suite.json → the markdown tables of the README's Performance section (pure functions)."""

from __future__ import annotations

from ops.bench.suite.figures import RECALL_SCENARIOS
from ops.bench.suite.sections import SECTIONS


def num(value, digits: int = 1) -> str:
    if value is None or value == "":
        return "–"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def times(value) -> str:
    return "–" if value is None else f"{value:.2f}×"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def measured(suite: dict) -> tuple[str, str]:
    """(dates, commits) the sections were measured on: a report can join separate runs."""
    records = [r for r in suite.get("sections", {}).values() if r.get("status") == "ok"]
    dates = sorted({(r.get("source") or {}).get("date", "")[:10] for r in records} - {""})
    commits = sorted({(r.get("source") or {}).get("commit") or (r.get("run") or {}).get("commit") for r in records} - {None})
    when = (dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}") if dates else suite.get("generated_at", "")[:10]
    which = ", ".join(f"`{c}`" for c in commits) if commits else f"`{suite.get('commit')}`"
    return when, which


def header(suite: dict) -> str:
    m = suite.get("machine", {})
    when, commits = measured(suite)
    runs = [r.get("run") or {} for r in suite.get("sections", {}).values() if r.get("status") == "ok"]
    dirty = " (with uncommitted changes)" if any(run.get("dirty") for run in runs) else ""
    mode = {"quick": "**quick run** (small sizes: its absolute figures are not comparable with a full run's)",
            "full": "full run"}.get(suite.get("mode"), "sections from separate runs (see each section)")
    loads = [run[key][0] for run in runs for key in ("load_before", "load_after") if run.get(key)]
    # On a shared machine the load explains more of the absolute figures than the code does.
    busy = f" (load average {num(min(loads), 1)}–{num(max(loads), 1)} around the sections)" if loads else ""
    return (f"Measured {when} on {m.get('cores')} cores{busy}, {num(m.get('ram_gib'))} GiB RAM "
            f"({m.get('cpu')}, {m.get('platform')}, Python {m.get('python')}), commit {commits}{dirty}; "
            f"{mode}. Figures that depend on the machine come with ratios that do not.")


def provenance(record: dict) -> str:
    run, source = record.get("run") or {}, record.get("source") or {}
    parts = []
    if run.get("command"):
        parts += [f"`{run['command']}`", run.get("mode", "")]
    if source:
        stamp = source.get("date", "")[:16].replace("T", " ") + " UTC"
        if source.get("date_from") in ("file mtime", "git commit"):
            stamp += f" ({source['date_from']}: the JSON carries no date)"
        parts.append(f"`ops/bench/results/{source.get('file')}` of {stamp}")
        dirty = " with uncommitted changes" if run.get("dirty") else ""
        parts.append(f"commit `{source.get('commit') or run.get('commit') or 'unknown'}`{dirty}")
    if run.get("duration_s") is not None:
        parts.append(f"{num(run['duration_s'])} s")
    if run.get("load_before"):
        parts.append(f"load {num(run['load_before'][0], 2)} → {num((run.get('load_after') or [None])[0], 2)}")
    parts = [p for p in parts if p]
    return "_" + " · ".join(parts) + "_" if parts else ""


def ingest(f: dict, ratios: dict) -> list[str]:
    lines = ["| provider | path | memories | 1 worker /s | 2 workers /s | 2 ÷ 1 | ÷ raw model (1 / 2 workers) |",
             "|---|---|---|---|---|---|---|"]
    by = {(r["provider"], r["workers"]): r for r in f.get("rows", [])}
    for provider in sorted({p for p, _ in by}):
        one, two = by.get((provider, 1), {}), by.get((provider, 2), {})
        raw = "–"
        if provider == "local":
            raw = " / ".join(times(ratios.get(f"local_batch_{w}_workers_over_raw_model")) for w in (1, 2))
        lines.append(f"| {provider} | batch (Slack export, `POST /memory/batch`) | {num(one.get('batch_messages') or two.get('batch_messages'))} "
                     f"| {num(one.get('batch_rate'))} | {num(two.get('batch_rate'))} "
                     f"| {times(ratios.get(f'{provider}_batch_2_over_1_workers'))} | {raw} |")
        if one.get("single_rate") is not None or two.get("single_rate") is not None:
            lines.append(f"| {provider} | single `POST /memory`, 8 clients | {num(one.get('single_writes') or two.get('single_writes'))} "
                         f"| {num(one.get('single_rate'))} | {num(two.get('single_rate'))} "
                         f"| {times(ratios.get(f'{provider}_single_2_over_1_workers'))} | – |")
    rss = " / ".join(num(r.get("importer_peak_rss_mib")) for r in f.get("rows", [])) + " MiB"
    if f.get("importer_rss_small_mib") is not None:
        rss += f" (and {num(f['importer_rss_small_mib'])} MiB importing {num(f.get('importer_rss_small_messages'))} messages)"
    per_row = [num(r["raw_model_rate"]) for r in f.get("rows", []) if r.get("raw_model_rate") is not None]
    raw_rate = " / ".join(per_row) if per_row else num(f.get("raw_model_rate"))
    lines += ["", f"Raw embedding rate of the local model (all-MiniLM-L6-v2, same texts, same machine, "
                  f"in a process of its own with no pipeline running, measured beside each local row): **{raw_rate}/s** "
                  f"over {num(f.get('raw_model_texts'))} texts. Importer peak RSS per row: {rss}."]
    return lines


def latency(f: dict, ratios: dict) -> list[str]:
    idle = f.get("idle", {})
    lines = ["| waiting `POST /memory`, one at a time | p50 ms | p95 ms | p99 ms | max ms | answered 201 (recallable) |",
             "|---|---|---|---|---|---|",
             f"| {num(idle.get('samples'))} writes, hash provider | {num(idle.get('p50_ms'))} | {num(idle.get('p95_ms'))} "
             f"| **{num(idle.get('p99_ms'))}** | {num(idle.get('max_ms'))} | {num(idle.get('recallable_201'))} |"]
    rows = {r["workers"]: r for r in f.get("single_writes", [])}
    if rows:
        first = next(iter(rows.values()))
        lines += ["", f"Sustained single writes ({num(first.get('writes'))} fire-and-forget, {first.get('clients')} clients, "
                      f"{first.get('provider')} provider), recallable/s: "
                      + ", ".join(f"{w} worker{'s' if w != 1 else ''} {num(r.get('recallable_per_s'))}" for w, r in sorted(rows.items()))
                      + f" (2 ÷ 1: {times(ratios.get('single_writes_2_over_1_workers'))})."]
    return lines


def recall(f: dict, ratios: dict) -> list[str]:
    lines = ["| memories | scenario | server p50 / p95 / p99 ms | client p50 / p95 / p99 ms |", "|---|---|---|---|"]
    sizes = list(f.get("sizes", {}))
    for size in sizes:
        for name, r in f["sizes"][size].items():
            server = " / ".join(num(r.get(f"server_{p}")) for p in ("p50", "p95", "p99"))
            client = " / ".join(num(r.get(f"client_{p}")) for p in ("p50", "p95", "p99"))
            lines.append(f"| {num(int(size))} | {RECALL_SCENARIOS.get(name, name)} | {server} | {client} |")
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        growth = ", ".join(f"{RECALL_SCENARIOS.get(name, name)} {times(ratios.get(f'{name}_server_p50_{large}_over_{small}'))}"
                           for name in f["sizes"][large])
        lines += ["", f"{num(int(large))} ÷ {num(int(small))} memories (server p50): {growth}. "
                      f"{num(f.get('queries'))} queries per scenario, limit 10, hash embeddings passed in."]
    return lines


def maintenance(f: dict, _ratios: dict) -> list[str]:
    lines = [f"Over {num(f.get('memories'))} memories (page {num(f.get('page_size'))}; loaded in {num(f.get('load_s'))} s):", "",
             "| cycle | seconds | memories/s | peak RSS MB |", "|---|---|---|---|"]
    for c in f.get("cycles", []):
        lines.append(f"| {c.get('cycle')} | {num(c.get('seconds'))} | {num(c.get('memories_per_s'))} | {num(c.get('peak_rss_mb'))} |")
    return lines


QUALITY_METRICS = ("recall@1", "recall@5", "recall@10", "hit@5", "mrr")


def _quality_table(summary: dict) -> list[str]:
    lines = ["| category | questions | recall@1 | recall@5 | recall@10 | hit@5 | MRR |", "|---|---|---|---|---|---|---|"]
    for name in [n for n in summary if n != "overall"] + (["overall"] if "overall" in summary else []):
        row = summary[name]
        label = f"**{name}**" if name == "overall" else name
        lines.append(f"| {label} | {num(row.get('questions'))} | " + " | ".join(num(row.get(m), 3) for m in QUALITY_METRICS) + " |")
    return lines


def quality(f: dict, _ratios: dict) -> list[str]:
    if "corpora" in f:
        lines: list[str] = []
        for c in f["corpora"]:
            after, cpu = c.get("after_write") or {}, c.get("cpu_ms_per_memory") or {}
            lines += [f"**{c.get('corpus')}** ({num(c.get('conversations'))} conversations, {num(c.get('memories'))} turns, "
                      f"{num(c.get('questions'))} questions), once the pipeline is idle:", ""]
            lines += _quality_table(c.get("summary") or {})
            lines += ["", f"Right after the last write (before enrichment): recall@5 {num(after.get('recall@5'), 3)}, "
                          f"recall@10 {num(after.get('recall@10'), 3)}. Cost per memory: {num(c.get('texts_per_memory'), 2)} "
                          f"embedded texts, CPU {num(cpu.get('workers'))} ms workers + {num(cpu.get('web'))} ms web; "
                          f"recall p50 {num(c.get('recall_p50_ms'))} ms, p95 {num(c.get('recall_p95_ms'))} ms.", ""]
        return lines[:-1]
    lines = ["| category | questions | recall@1 | recall@5 | recall@10 | hit@5 | MRR |", "|---|---|---|---|---|---|---|"]
    summary = f.get("summary", {})
    for name in [n for n in summary if n != "overall"] + (["overall"] if "overall" in summary else []):
        row = summary[name]
        label = f"**{name}**" if name == "overall" else name
        lines.append(f"| {label} | {num(row.get('questions'))} | " + " | ".join(num(row.get(m), 3) for m in QUALITY_METRICS) + " |")
    settings = ", ".join(f"`{k}={v}`" for k, v in (f.get("settings") or {}).items())
    lines += ["", f"{num(f.get('conversations'))} conversation(s), {num(f.get('memories'))} turns written through the API "
                  f"in {num(f.get('ingest_seconds'))} s, {num(f.get('questions'))} questions recalled scoped to their "
                  f"conversation, mean {num(f.get('mean_recall_ms'))} ms each; {f.get('provider')} provider"
                  + (f", {settings}" if settings else "") + "."]
    return lines


def enrich(f: dict, _ratios: dict) -> list[str]:
    runs = f.get("runs", [])
    with_cpu = any(r.get("cpu_ms_per_memory") is not None for r in runs)  # older results have rates only
    if with_cpu:
        lines = ["| configuration | memories | memories/s | CPU ms per memory | idle bound /s |", "|---|---|---|---|---|"]
    else:
        lines = ["| entities | memories | memories/s |", "|---|---|---|"]
    for r in runs:
        row = f"| {r.get('label') or r.get('entities')} | {num(r.get('memories'))} | {num(r.get('memories_per_s'))} |"
        if with_cpu:
            row += f" {num(r.get('cpu_ms_per_memory'), 2)} | {num(r.get('idle_bound_per_s'))} |"
        lines.append(row)
    ner = f"spaCy NER alone on the same texts: {num(f.get('ner_alone_per_s'))}/s"
    if f.get("ner_alone_cpu_ms") is not None:
        ner += f", {num(f.get('ner_alone_cpu_ms'), 2)} ms CPU per memory"
    lines += ["", ner + f" (1 worker process × {f.get('threads')} threads, pattern classifier"
              + ("; CPU = worker + graph + broker; idle bound = what that CPU allows on idle cores, one worker process)."
                 if with_cpu else ").")]
    return lines


def rss(f: dict, _ratios: dict) -> list[str]:
    lines = ["| process | count | peak RSS MiB (largest) | peak RSS MiB (sum) |", "|---|---|---|---|"]
    for name, p in (f.get("processes") or {}).items():
        lines.append(f"| {name} | {num(p.get('count'))} | {num(p.get('peak_rss_mib_max'))} | {num(p.get('peak_rss_mib_sum'))} |")
    load = f.get("load") or {}
    if load:
        lines += ["", f"`python -m ops.serve` (the embedded default, {f.get('provider')} provider) under a short mixed load: "
                      + ", ".join(f"{k.replace('_', ' ')}: {num(v)}" for k, v in load.items())
                      + ". Peak = each process's high-water mark (VmHWM)."]
    return lines


PHASE_LABELS = {"import": "Slack import", "import_probed": "import through the batch API, recall every 100 ms",
                "singles": "singles, nothing else asking",
                "singles_probed": "singles, recall every 100 ms"}


def lifecycle(f: dict, _ratios: dict) -> list[str]:
    lines = ["| phase | memories | recallable /s | the model alone on the phase's texts /s | ÷ the model's own rate "
             "| ÷ the model, length-sorted | ÷ the model, called as a worker calls it "
             "| recall p99 / max ms (every 100 ms) | /health max ms | probe errors |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in f.get("rows", []):
        lines.append(f"| {PHASE_LABELS.get(r['phase'], r['phase'])} | {num(r.get('memories'))} | {num(r.get('rate'))} | {num(r.get('model_rate'))} "
                     f"| {times(r.get('over_model'))} | {times(r.get('over_model_sorted'))} | {times(r.get('over_model_worker'))} "
                     f"| {num(r.get('recall_p99_ms'))} / {num(r.get('recall_max_ms'))} | {num(r.get('health_max_ms'))} "
                     f"| {num(r.get('probe_errors'))} |")
    lines += ["", "The model alone: in calls of the workers' batch size, in order (the issue's measure), at its "
                  "fastest of one process with 1 thread, the workers' count or every core, and one-thread processes "
                  "side by side, one per core (files from before session 28: one process only); "
                  "length-sorted: the same texts sorted by length within each import batch, as the persist stage "
                  "groups them; called as a worker calls it: in order, from a worker process's threads taking turns, "
                  "whose OpenMP waits libgomp throttles (the model as the pipeline can run it; the issue's ratio is the "
                  f"first). The Slack import runs with nothing else asking (issue 21's measure); then as many real "
                  "texts again (or up to --memories) go through the batch API with the prober's recall every 100 ms. "
                  f"Singles: {num(f.get('clients'))} clients, "
                  f"each waiting for its answer; the first ones with no recall meanwhile (issue 21's measure), "
                  f"the next ones with the prober's recall every 100 ms. Enrichment and SIMILAR_TO done {num(f.get('background_after_last_write_s'))} s "
                  f"after the last write. ERROR lines or tracebacks in a clean start's log: {num(f.get('start_log_errors'))}.", "",
              "| stop | stop s | processes left | back to healthy s | memories before → after | log errors on restart |",
              "|---|---|---|---|---|---|"]
    for r in f.get("restarts", []):
        lines.append(f"| {r.get('how')} | {num(r.get('stop_s'))} | {num(r.get('orphans'))} | {num(r.get('restart_s'))} "
                     f"| {num(r.get('memories_before'))} → {num(r.get('memories_after'))} | {num(r.get('log_errors'))} |")
    return lines


def growth(f: dict, _ratios: dict) -> list[str]:
    lines = ["| memories | recall p50 / p95 ms | tag-scoped p50 / p95 ms | web RSS MB (own heap) | restart s "
             "| consolidation cycles s |", "|---|---|---|---|---|---|"]
    for r in f.get("rows", []):
        if r.get("error"):
            lines.append(f"| {num(r.get('memories'))} | not measured: {r['error'][:300]} | | "
                         f"{num(r.get('web_rss_mb'))} ({num(r.get('web_rss_anon_mb'))}) | | |")
            continue
        cycles = ", ".join(f"{m} {num(s)}" for m, s in (r.get("cycles") or {}).items())
        lines.append(f"| {num(r.get('memories'))} | {num(r.get('plain_p50_ms'))} / {num(r.get('plain_p95_ms'))} "
                     f"| {num(r.get('tagged_p50_ms'))} / {num(r.get('tagged_p95_ms'))} "
                     f"| {num(r.get('web_rss_mb'))} ({num(r.get('web_rss_anon_mb'))}) "
                     f"| {num(r.get('restart_s'))} | {cycles} |")
    lines += ["", "Web RSS: all resident pages (VmRSS), and in brackets its own heap (RssAnon); the rest are "
                  "pages of the Edge shard's mapped files, which the kernel may drop and read again."]
    return lines


TABLES = {"lifecycle": lifecycle, "growth": growth, "latency": latency, "ingest": ingest, "recall": recall, "maintenance": maintenance,
          "quality": quality, "enrich": enrich, "rss": rss}


def error_summary(error: str | None) -> str:
    """The first line of an error and, for a crashed benchmark, the last line it printed."""
    lines = [line.strip() for line in (error or "").strip().splitlines() if line.strip()]
    if not lines:
        return "no detail"
    return lines[0] if len(lines) == 1 else f"{lines[0]} … {lines[-1]}"


def section(name: str, record: dict) -> list[str]:
    lines = [f"### {record.get('title', name)}", ""]
    if record.get("status") == "ok":
        lines += TABLES[name](record.get("figures", {}), record.get("ratios", {}))
    else:
        lines.append(f"**{record.get('status')}**: {_cell(error_summary(record.get('error')))}")
    line = provenance(record)
    return lines + (["", line] if line else [])


def render(suite: dict) -> str:
    lines = [header(suite)]
    records = suite.get("sections", {})
    for s in SECTIONS:
        if s.name in records:
            lines += [""] + section(s.name, records[s.name])
    return "\n".join(lines)


def document(suite: dict) -> str:
    """ops/bench/results/suite.md: the same tables under a title."""
    return f"# mempipe benchmark suite\n\n{render(suite)}\n"


def _anchor(title: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    kept = "".join(ch for ch in title.lower() if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


def _headline(name: str, f: dict, ratios: dict) -> str:
    """The one figure of a section a newcomer asks about first."""
    if name == "ingest":
        rows = {(r["provider"], r["workers"]): r for r in f.get("rows", [])}
        hash_batch, local = rows.get(("hash", 1), {}), rows.get(("local", 1), {})
        return (f"generated Slack export, 1 worker: batch {num(hash_batch.get('batch_rate'))}/s with the hash embedder, "
                f"single `POST /memory` × 8 clients {num(hash_batch.get('single_rate'))}/s; with the local model "
                f"{num(local.get('batch_rate'))}/s = {times(ratios.get('local_batch_1_workers_over_raw_model'))} the model's own rate")
    if name == "latency":
        idle = f.get("idle", {})
        return f"waiting `POST /memory` answered `201` (recallable): p50 {num(idle.get('p50_ms'))} ms, p99 {num(idle.get('p99_ms'))} ms"
    if name == "recall":
        sizes = f.get("sizes", {})
        largest = max(sizes, key=int) if sizes else None
        scenarios = sizes.get(largest, {}) if largest else {}
        parts = [f"{RECALL_SCENARIOS.get(n, n)} p50 {num(r.get('server_p50'))} / p95 {num(r.get('server_p95'))} ms"
                 for n, r in list(scenarios.items())[:2]]  # plain and tag-scoped come first
        return f"at {num(int(largest)) if largest else '–'} memories, server: " + ", ".join(parts)
    if name == "maintenance":
        cycles = ", ".join(f"{c.get('cycle')} {num(c.get('seconds'))} s" for c in f.get("cycles", []))
        return f"over {num(f.get('memories'))} memories: {cycles}"
    if name == "quality":
        if "corpora" in f:
            return "; ".join(
                f"{c.get('corpus')}: recall@5 {num(((c.get('summary') or {}).get('overall') or {}).get('recall@5'), 3)}, "
                f"recall@10 {num(((c.get('summary') or {}).get('overall') or {}).get('recall@10'), 3)} "
                f"({num(c.get('questions'))} questions)" for c in f["corpora"])
        overall = (f.get("summary") or {}).get("overall", {})
        return (f"evidence recall@5 {num(overall.get('recall@5'), 3)}, recall@10 {num(overall.get('recall@10'), 3)}, "
                f"MRR {num(overall.get('mrr'), 3)} ({num(f.get('questions'))} questions)")
    if name == "enrich":
        runs = f.get("runs", [])
        return ", ".join(f"{r.get('label') or r.get('entities')} {num(r.get('memories_per_s'))}/s" for r in runs)
    if name == "lifecycle":
        rows = {r["phase"]: r for r in f.get("rows", [])}
        restart = max((r.get("restart_s") or 0 for r in f.get("restarts", [])), default=None)
        imported, singles = rows.get("import", {}), rows.get("singles", {})
        sorted_ratio = imported.get("over_model_sorted")
        return (f"Slack import {num(imported.get('rate'))}/s = {times(imported.get('over_model'))}"
                + (f" ({times(sorted_ratio)} the length-sorted model)" if sorted_ratio is not None else "")
                + f" and waiting singles {num(singles.get('rate'))}/s = "
                f"{times(singles.get('over_model'))} the model's own rate on their texts; recall max "
                f"{num(rows.get('import_probed', imported).get('recall_max_ms'))} ms during an import; "
                f"back to healthy in ≤ {num(restart)} s")
    if name == "growth":
        rows = f.get("rows", [])
        measured = [r for r in rows if not r.get("error")]
        last = measured[-1] if measured else {}
        return (f"at {num(last.get('memories'))} memories: recall p95 {num(last.get('plain_p95_ms'))} ms, "
                f"tag-scoped {num(last.get('tagged_p95_ms'))} ms, web RSS {num(last.get('web_rss_mb'))} MB, "
                f"restart {num(last.get('restart_s'))} s"
                + "".join(f"; {num(r.get('memories'))} not measured ({r['error'][:80]})" for r in rows if r.get("error")))
    if name == "rss":
        return ", ".join(f"{n} {num(p.get('peak_rss_mib_max'))} MiB" for n, p in (f.get("processes") or {}).items())
    return ""


def summary(suite: dict, report_link: str = "docs/benchmarks.md") -> str:
    """The README's short table: one headline per section, linking to the full report."""
    when, commits = measured(suite)
    lines = [f"Measured {when} on {suite.get('machine', {}).get('cores')} cores, commit {commits}; "
             f"every table, its command and its load average in [the full report]({report_link}).", "",
             "| section | headline |", "|---|---|"]
    records = suite.get("sections", {})
    for s in SECTIONS:
        record = records.get(s.name)
        if not record:
            continue
        title = record.get("title", s.name)
        link = f"[{title}]({report_link}#{_anchor(title)})"
        if record.get("status") != "ok":
            lines.append(f"| {link} | **{record.get('status')}**: {_cell(error_summary(record.get('error')))} |")
            continue
        lines.append(f"| {link} | {_cell(_headline(s.name, record.get('figures', {}), record.get('ratios', {})))} |")
    return "\n".join(lines)
