"""The benchmark suite's pure parts: reading bench JSON, merging reports, rendering, the README block."""

import json
import os
import re
import subprocess
from pathlib import Path

from ops.bench.suite import figures, readme, render, report, sources
from ops.bench.suite.sections import BY_NAME, SECTIONS

LATENCY = {
    "machine": {"cores": 2, "commit": "abc1234", "date": "2026-11-30"},
    "results": [
        {"provider": "hash", "worker_processes": 1,
         "idle_latency": {"samples": 100, "recallable_201": 100, "p50_ms": 37.7, "p95_ms": 56.8, "p99_ms": 77.2, "max_ms": 90.0},
         "throughput": {"writes": 600, "clients": 4, "accept_rate_per_s": 300.0, "recallable_rate_per_s": 150.0}},
        {"provider": "hash", "worker_processes": 2,
         "throughput": {"writes": 600, "clients": 4, "accept_rate_per_s": 320.0, "recallable_rate_per_s": 240.0}},
    ],
}
INGEST = {
    "when": "20261130T230102Z",
    "rows": [
        {"provider": "hash", "workers": 1, "batch": {"messages": 2000, "imported": 1900, "rate": 400.0, "importer_peak_rss_mib": 60.0},
         "single": {"writes": 1000, "rate": 175.0}},
        {"provider": "hash", "workers": 2, "batch": {"messages": 2000, "imported": 1900, "rate": 600.0, "importer_peak_rss_mib": 61.0},
         "single": {"writes": 1000, "rate": 210.0}},
        {"provider": "local", "workers": 1, "batch": {"messages": 200, "imported": 190, "rate": 14.0}},
        {"provider": "local", "workers": 2, "batch": {"messages": 200, "imported": 190, "rate": 21.0}},
    ],
    "raw_model": {"texts": 190, "seconds": 4.0, "rate": 42.0},
    "importer_rss_small": {"messages": 500, "importer_peak_rss_mib": 58.5},
}
RECALL = {
    "queries_per_scenario": 50,
    "results": {
        "2000": {"a_plain": {"server_p50": 20.0, "server_p95": 30.0, "server_p99": 40.0,
                             "client_p50": 25.0, "client_p95": 35.0, "client_p99": 45.0}},
        "200": {"a_plain": {"server_p50": 10.0, "server_p95": 20.0, "server_p99": 30.0,
                            "client_p50": 15.0, "client_p95": 25.0, "client_p99": 35.0}},
    },
}


def test_latency_figures_and_worker_ratio():
    f = figures.latency(LATENCY)
    assert f["idle"]["p99_ms"] == 77.2
    assert figures.latency_ratios(f) == {"single_writes_2_over_1_workers": 1.6}


def test_ingest_ratios_compare_workers_and_the_raw_model():
    ratios = figures.ingest_ratios(figures.ingest(INGEST))
    assert ratios["hash_batch_2_over_1_workers"] == 1.5
    assert ratios["hash_single_2_over_1_workers"] == 1.2
    assert ratios["local_batch_1_workers_over_raw_model"] == 0.333
    assert ratios["local_batch_2_workers_over_raw_model"] == 0.5
    assert "local_single_2_over_1_workers" not in ratios  # not measured: no ratio, not a zero


def test_ingest_ratio_uses_the_raw_model_rate_measured_beside_each_row():
    rows = [dict(row) for row in INGEST["rows"]]
    rows[2] = {**rows[2], "raw_model": {"texts": 190, "rate": 28.0}}
    rows[3] = {**rows[3], "raw_model": {"texts": 190, "rate": 30.0}}
    f = figures.ingest({"rows": rows})  # no top-level raw_model: the newer bench_ingest layout
    ratios = figures.ingest_ratios(f)
    assert ratios["local_batch_1_workers_over_raw_model"] == 0.5
    assert ratios["local_batch_2_workers_over_raw_model"] == 0.7
    assert f["raw_model_rate"] == 28.0 and f["raw_model_texts"] == 190


def test_recall_sizes_sorted_numerically_and_growth_ratio():
    f = figures.recall(RECALL)
    assert list(f["sizes"]) == ["200", "2000"]
    assert figures.recall_ratios(f)["a_plain_server_p50_2000_over_200"] == 2.0


def test_provenance_uses_the_json_date_else_the_file_mtime():
    assert sources.provenance(INGEST, 0)["date"].startswith("2026-11-30T23:01:02")
    assert sources.provenance(LATENCY, 0) == {"date": "2026-11-30T00:00:00+00:00", "date_from": "json", "commit": "abc1234"}
    same_day = sources.provenance(LATENCY, 1796079600.0)  # 2026-11-30 23:00 UTC
    assert same_day["date"] == "2026-11-30T23:00:00+00:00" and same_day["date_from"] == "json day, file mtime"
    found = sources.provenance({}, 86400.0)
    assert found == {"date": "1970-01-02T00:00:00+00:00", "date_from": "file mtime", "commit": None}


def test_newest_picks_the_latest_file_written_since(tmp_path):
    old, new = tmp_path / "bench_recall-1.json", tmp_path / "bench_recall-2.json"
    old.write_text("{}"), new.write_text("{}")
    os.utime(old, (1000, 1000)), os.utime(new, (2000, 2000))
    assert sources.newest(("bench_recall-*.json",), tmp_path) == new
    assert sources.newest(("bench_recall-*.json",), tmp_path, since=3000) is None


def _source(name: str, mtime: float) -> dict:
    return {"file": name, "mtime": mtime, "date": "2026-11-30T00:00:00+00:00", "date_from": "json", "commit": None}


def test_rebuild_keeps_the_run_of_the_same_file_and_drops_it_for_a_newer_one():
    run = {"command": "python -m ops.bench.latency --quick", "mode": "quick", "commit": "abc1234", "duration_s": 60.0}
    previous = {"sections": {
        "latency": report.from_source(BY_NAME["latency"], LATENCY, _source("bench_latency.json", 1.0), run),
        "recall": report.from_source(BY_NAME["recall"], RECALL, _source("bench_recall-1.json", 1.0), run),
    }}
    found = {"latency": (LATENCY, _source("bench_latency.json", 1.0)), "recall": (RECALL, _source("bench_recall-2.json", 2.0))}
    sections = report.rebuild(previous, found)
    assert sections["latency"]["run"] == run
    assert sections["recall"]["run"] is None and sections["recall"]["source"]["file"] == "bench_recall-2.json"
    assert sections["ingest"]["status"] == "missing"
    # No per-bench JSON left (a fresh checkout): the committed report's sections survive.
    assert report.rebuild(previous, {})["latency"] == previous["sections"]["latency"]


def test_the_same_file_is_known_by_its_content_then_by_its_own_date_and_only_last_by_mtime():
    hashed = {"file": "b.json", "mtime": 1.0, "sha256": "aa", "date_from": "file mtime"}
    assert report._same_file(hashed, {**hashed, "mtime": 2.0})  # a clone: new mtime, same content
    assert not report._same_file(hashed, {**hashed, "sha256": "bb"})
    dated = _source("b.json", 1.0)  # a record from before the hash: the JSON's own date and commit
    assert report._same_file(dated, {**dated, "mtime": 2.0, "sha256": "aa"})
    assert not report._same_file(dated, {**dated, "date": "2026-12-01T00:00:00+00:00", "sha256": "aa"})
    undated = {"file": "b.json", "mtime": 1.0, "date_from": "file mtime"}
    assert report._same_file(undated, dict(undated)) and not report._same_file(undated, {**undated, "mtime": 2.0})


def test_an_undated_json_takes_the_date_of_the_commit_that_wrote_it_not_the_clones_mtime(tmp_path):
    def git(*args, **env):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True,
                       env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                            "GIT_COMMITTER_EMAIL": "t@t", **env})

    result = tmp_path / "bench_quality.json"
    result.write_text('{"commit": "abc1234"}')
    git("init", "-q")
    git("add", result.name)
    git("commit", "-q", "-m", "r", GIT_COMMITTER_DATE="2026-12-04T02:48:00+00:00")
    _, source = sources.read(result)
    assert (source["date"], source["date_from"]) == ("2026-12-04T02:48:00+00:00", "git commit")
    result.write_text('{"commit": "def5678"}')  # changed since: its mtime is the best there is
    _, source = sources.read(result)
    assert source["date_from"] == "file mtime" and source["commit"] == "def5678"
    outside = tmp_path / "other.json"  # not committed
    outside.write_text("{}")
    assert sources.read(outside)[1]["date_from"] == "file mtime"


def test_a_changed_bench_json_fails_its_section_only():
    record = report.from_source(BY_NAME["recall"], {"results": {"x": {}}}, _source("bench_recall-9.json", 1.0))
    assert record["status"] == "failed" and "bench_recall-9.json" in record["error"]


def test_mode_is_quick_only_when_every_section_ran_quick():
    quick = {"status": "ok", "run": {"mode": "quick"}}
    assert report.mode_of({"a": quick, "b": quick}) == "quick"
    assert report.mode_of({"a": quick, "b": {"status": "ok", "run": None}}) == "mixed"


def _suite(sections: dict) -> dict:
    machine = {"cores": 2, "ram_gib": 23.5, "cpu": "cpu", "platform": "Linux", "python": "3.11"}
    return report.assemble(machine, {"commit": "abc1234", "dirty": False}, "2026-11-30T23:00:00+00:00", sections)


def test_render_shows_figures_ratios_and_failures():
    run = {"command": "python -m ops.bench.ingest", "mode": "quick", "duration_s": 12.0, "load_before": [1.0, 1, 1],
           "load_after": [2.0, 1, 1], "commit": "abc1234"}
    sections = {
        "ingest": report.from_source(BY_NAME["ingest"], INGEST, _source("bench_ingest-1.json", 1.0), run),
        "recall": report.failed(BY_NAME["recall"], "exit status 1; last output:\nTraceback\nValueError: boom", run),
    }
    text = render.render(_suite(sections))
    assert "2 cores (load average 1.0–2.0 around the sections), 23.5 GiB RAM" in text and "commit `abc1234`" in text and "**quick run**" in text
    assert "| local | batch (Slack export, `POST /memory/batch`) | 190 | 14.0 | 21.0 | 1.50× | 0.33× / 0.50× |" in text
    assert "Importer peak RSS per row: 60.0 / 61.0 / – / – MiB (and 58.5 MiB importing 500 messages)." in text
    assert "**failed**: exit status 1; last output: … ValueError: boom" in text
    assert "load 1.00 → 2.00" in text
    assert text == render.render(_suite(sections))  # deterministic: the README test relies on it


def test_every_section_renders_from_an_empty_record():
    for section in SECTIONS:
        render.TABLES[section.name]({}, {})


def test_readme_block_replacement_keeps_the_rest():
    text = f"intro\n{readme.BEGIN}\nold\n{readme.END}\noutro\n"
    replaced = readme.replace_in(text, "new table")
    assert readme.block(replaced) == "new table" and replaced.startswith("intro\n") and replaced.endswith("outro\n")


def test_benchmarks_page_and_readme_summary_are_the_rendered_suite_report():
    suite = json.loads((Path(readme.ROOT) / "ops" / "bench" / "results" / "suite.json").read_text())
    fix = "run: python -m ops.bench.suite --render-only --write-docs"
    assert readme.block(readme.REPORT.read_text()) == render.render(suite).strip(), fix
    summary = readme.block(readme.README.read_text(), readme.SUMMARY_BEGIN, readme.SUMMARY_END)
    assert summary == render.summary(suite).strip(), fix


def test_readme_summary_links_every_section_to_its_heading_in_the_report():
    suite = json.loads((Path(readme.ROOT) / "ops" / "bench" / "results" / "suite.json").read_text())
    headings = {render._anchor(line[4:]) for line in render.render(suite).splitlines() if line.startswith("### ")}
    linked = re.findall(r"\(docs/benchmarks\.md#([^)]+)\)", render.summary(suite))
    assert linked and set(linked) <= headings


def test_every_option_the_suite_passes_is_one_its_benchmark_declares():
    # Benchmarks change in parallel: a renamed option must fail here, not hours into a full run.
    for section in SECTIONS:
        source = (Path(readme.ROOT) / (section.module.replace(".", "/") + ".py")).read_text()
        for option in [a for a in section.full_args + section.quick_args if a.startswith("--")]:
            assert f'"{option}"' in source, f"{section.module} has no {option} option"


def test_a_benchmark_that_crashes_is_a_failed_section_with_its_error(tmp_path, monkeypatch):
    from dataclasses import replace

    from ops.bench.suite import runner

    monkeypatch.setattr(runner, "LOGS", tmp_path)
    broken = replace(BY_NAME["recall"], module="ops.bench.suite.no_such_benchmark", quick_args=())
    record = runner.run(broken, quick=True, timeout_s=60)
    assert record["status"] == "failed" and record["run"]["returncode"] == 1
    assert "exit status 1" in record["error"] and "No module named" in record["error"]
    assert record["run"]["mode"] == "quick" and record["run"]["duration_s"] >= 0
