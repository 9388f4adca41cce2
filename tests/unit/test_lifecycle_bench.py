"""The lifecycle benchmark's pure parts, and how the suite reports its JSON."""

from types import SimpleNamespace

from ops.bench import lifecycle
from ops.bench.suite import figures, render

USE = {
    "mode": "use", "raw_model": {"import": {"rate": 40.0, "length_sorted": {"rate": 72.0}}, "singles": {"rate": 20.0}},
    "start_log_errors": ["ERROR x"],
    "phases": {"import": {"imported": 1000, "topped_up": 200, "rate": 36.0},
               "singles": {"clients": 8, "writes": 300, "rate": 30.0},
               "background_after_last_write_s": 12.5},
    "probes": {"import": {"recall": {"p99_ms": 120.0, "max_ms": 480.0, "errors": 1},
                          "health": {"max_ms": 90.0, "errors": 0}}},
    "restarts": [{"how": "ctrl-c", "stop_s": 3.1, "orphans": 0, "restart_s": 6.0, "memories_before": 1500,
                  "memories_after": 1500, "log_errors": []},
                 {"how": "kill -9", "stop_s": 0.1, "orphans": 0, "restart_s": 8.5, "memories_before": 1500,
                  "memories_after": 1500, "log_errors": []}],
}


def test_latency_summary_counts_what_is_not_an_expected_status_as_an_error():
    rows = [(0.010, 200), (0.020, 200), (0.600, 200), (0.030, 503), (0.040, 0)]
    summary = lifecycle.latency_summary(rows, ok=(200,))
    assert summary["count"] == 5 and summary["errors"] == 2
    assert summary["max_ms"] == 600.0 and summary["over_500_ms"] == 1


def test_real_bodies_cycle_the_texts_and_make_every_repeat_a_new_memory():
    bodies = lifecycle.real_bodies(["a", "b"], 5)
    assert [b["content"] for b in bodies] == ["a", "b", "a (#1)", "b (#1)", "a (#2)"]
    assert len({b["content"] for b in bodies}) == 5


def test_suite_reads_the_use_run_as_ratios_to_the_model_on_each_phases_texts_and_restart_rows():
    f = figures.lifecycle(USE)
    rows = {r["phase"]: r for r in f["rows"]}
    assert rows["import"]["memories"] == 1200 and rows["import"]["over_model"] == 0.9
    assert rows["import"]["over_model_sorted"] == 0.5 and rows["singles"]["over_model_sorted"] is None
    assert rows["import"]["probe_errors"] == 1 and rows["singles"]["over_model"] == 1.5
    assert [r["how"] for r in f["restarts"]] == ["ctrl-c", "kill -9"] and f["start_log_errors"] == 1
    table = "\n".join(render.lifecycle(f, {}))
    assert "| Slack import | 1,200 | 36.0 | 40.0 | 0.90× | 0.50× |" in table
    assert "| kill -9 | 0.1 | 0 | 8.5 | 1,500 → 1,500 | 0 |" in table


def test_suite_reads_the_import_alone_and_the_import_under_recall_side_by_side():
    data = {**USE, "raw_model": {**USE["raw_model"], "import_probed": {"rate": 50.0}},
            "phases": {**USE["phases"], "import": {"memories": 1000, "rate": 36.0},
                       "import_probed": {"memories": 1000, "rate": 30.0}},
            "probes": {"import_probed": {"recall": {"p99_ms": 90.0, "max_ms": 140.0, "errors": 0}}}}
    f = figures.lifecycle(data)
    rows = {r["phase"]: r for r in f["rows"]}
    assert [r["phase"] for r in f["rows"]] == ["import", "import_probed", "singles"]
    assert rows["import"]["over_model"] == 0.9 and rows["import"]["recall_max_ms"] is None
    assert rows["import_probed"]["over_model"] == 0.6 and rows["import_probed"]["recall_max_ms"] == 140.0
    assert "| import through the batch API, recall every 100 ms | 1,000 | 30.0 | 50.0 | 0.60× |" in "\n".join(
        render.lifecycle(f, {}))
    assert "recall max 140.0 ms during an import" in render._headline("lifecycle", f, {})
    assert lifecycle.render({**data, "first_start_s": 5.0}).count("| import") == 2


def test_the_recallable_wait_looks_often_only_when_the_rate_so_far_says_it_is_near(monkeypatch):
    clock = iter([0.0, 1.0, 2.0, 2.5])
    monkeypatch.setattr(lifecycle.time, "monotonic", lambda: next(clock))
    poll = lifecycle.closing_in(1000)
    assert poll({"vector_count": 0}) == 0.5  # no rate yet
    assert poll({"vector_count": 100}) == 0.5  # 100/s: 9 s to go
    assert poll({"vector_count": 950}) == 0.05  # 475/s: 0.1 s to go
    assert poll({"vector_count": 1000}) == 0.05  # all in the index, the queues still to empty


def test_suite_reads_an_older_use_run_with_one_model_rate_for_both_phases():
    rows = {r["phase"]: r for r in figures.lifecycle({**USE, "raw_model": {"rate": 40.0}})["rows"]}
    assert rows["import"]["over_model"] == 0.9 and rows["singles"]["over_model"] == 0.75
    assert "singles_probed" not in rows  # older files: the singles ran with the prober on


def test_suite_reads_the_singles_measured_alone_and_under_recall_side_by_side():
    data = {**USE, "raw_model": {**USE["raw_model"], "singles_probed": {"rate": 25.0}},
            "phases": {**USE["phases"], "singles_probed": {"clients": 8, "writes": 300, "rate": 15.0}},
            "probes": {**USE["probes"], "singles_probed": {"recall": {"p99_ms": 200.0, "max_ms": 260.0, "errors": 0}}}}
    f = figures.lifecycle(data)
    rows = {r["phase"]: r for r in f["rows"]}
    assert rows["singles"]["over_model"] == 1.5 and rows["singles"]["recall_p99_ms"] is None
    assert rows["singles_probed"]["over_model"] == 0.6 and rows["singles_probed"]["recall_p99_ms"] == 200.0
    table = "\n".join(render.lifecycle(f, {}))
    assert "| singles, nothing else asking | 300 | 30.0 | 20.0 | 1.50× |" in table
    assert "| singles, recall every 100 ms | 300 | 15.0 | 25.0 | 0.60× |" in table
    assert lifecycle.render({**data, "first_start_s": 5.0}).count("| singles") == 2


def test_the_model_called_as_a_worker_calls_it_is_a_ratio_beside_the_issues_own():
    model = {"rate": 40.0, "length_sorted": {"rate": 72.0}, "as_worker_calls": {"rate": 30.0}}
    data = {**USE, "raw_model": {**USE["raw_model"], "import": model}}
    rows = {r["phase"]: r for r in figures.lifecycle(data)["rows"]}
    assert rows["import"]["over_model"] == 0.9 and rows["import"]["over_model_worker"] == 1.2
    assert rows["singles"]["model_worker_rate"] is None and rows["singles"]["over_model_worker"] is None
    table = "\n".join(render.lifecycle(figures.lifecycle(data), {}))
    assert "| Slack import | 1,200 | 36.0 | 40.0 | 0.90× | 0.50× | 1.20× |" in table
    assert "| singles, nothing else asking | 300 | 30.0 | 20.0 | 1.50× | – | – |" in table
    own = lifecycle.render({**data, "first_start_s": 5.0})
    assert "| import | 1,200 | 36.0 | 40.0 / 72.0 | 90% / 50% | 30.0 (120%) |" in own
    assert "| singles | 300 | 30.0 | 20.0 | 150% | – |" in own


def test_suite_reads_growth_rows_side_by_side():
    data = {"provider": "hash", "rows": [
        {"memories": 10000, "recall_plain": {"p50_ms": 8.0, "p95_ms": 12.0}, "recall_tagged": {"p50_ms": 7.0, "p95_ms": 10.0},
         "web_rss_mb": 400.0, "restart": {"restart_s": 3.0}, "consolidation": {"decay": {"duration_s": 5.0}}},
        {"memories": 100000, "recall_plain": {"p50_ms": 9.0, "p95_ms": 14.0}, "recall_tagged": {"p50_ms": 8.0, "p95_ms": 11.0},
         "web_rss_mb": 900.0, "restart": {"restart_s": 4.0}, "consolidation": {"decay": {"duration_s": 50.0}}}]}
    table = render.growth(figures.growth(data), {})
    assert table[2].startswith("| 10,000 | 8.0 / 12.0 | 7.0 / 10.0 | 400.0 (–) | 3.0 | decay 5.0 |")
    assert table[3].startswith("| 100,000 |")


def test_suite_reads_a_growth_row_that_failed_and_the_web_rss_split():
    data = {"provider": "hash", "rows": [
        {"memories": 100000, "recall_plain": {"p50_ms": 9.0, "p95_ms": 14.0}, "recall_tagged": {"p50_ms": 8.0, "p95_ms": 11.0},
         "web_rss_mb": {"VmRSS": 750.0, "RssAnon": 400.0, "RssFile": 350.0}, "restart": {"restart_s": 4.0},
         "consolidation": {"decay": {"duration_s": 50.0}}},
        {"memories": 1000000, "error": "RuntimeError: 1000000 recallable: not within 60s",
         "web_rss_mb": {"VmRSS": 4900.0, "RssAnon": 1300.0, "RssFile": 3600.0}}]}
    f = figures.growth(data)
    table = render.growth(f, {})
    assert table[2].startswith("| 100,000 | 9.0 / 14.0 | 8.0 / 11.0 | 750.0 (400.0) | 4.0 |")
    assert table[3].startswith("| 1,000,000 | not measured: RuntimeError: 1000000 recallable") and "4,900.0 (1,300.0)" in table[3]
    headline = render._headline("growth", f, {})
    assert headline.startswith("at 100,000 memories: recall p95 14.0 ms") and "; 1,000,000 not measured (" in headline


def test_growth_waits_for_the_index_build_of_this_size_only(monkeypatch):
    logs = iter([(1, [30.0], 0), (2, [30.0], 0), (2, [30.0], 0), (2, [30.0, 95.5], 0)])
    monkeypatch.setattr(lifecycle, "index_builds", lambda service: next(logs))
    monkeypatch.setattr(lifecycle, "shard_copy_exists", lambda service: False)
    monkeypatch.setattr(lifecycle.time, "sleep", lambda s: None)
    built = lifecycle.wait_for_index_build(None, timeout=60, before=(1, [30.0], 0))
    assert built["started"] == 1 and built["seconds"] == [95.5] and built["failed"] == 0


def test_growth_waits_for_a_build_whose_copy_is_being_taken_before_its_start_is_logged(monkeypatch, tmp_path):
    # the 1M run of session 29 measured recall beside a build the bench had not seen begin
    service = SimpleNamespace(data_dir=tmp_path)
    (tmp_path / "qdrant-edge" / "memories.build").mkdir(parents=True)
    logs = [(0, [], 0)] * 3 + [(1, [], 0), (1, [600.0], 0)]
    looks = iter(logs)

    def index_builds(_service):
        seen = next(looks)
        if seen[1]:  # the swap: the copy became the live shard
            (tmp_path / "qdrant-edge" / "memories.build").rmdir()
        return seen

    clock = iter(range(0, 10_000, 40))  # 40 s a look: past start_within_s before the start line
    monkeypatch.setattr(lifecycle, "index_builds", index_builds)
    monkeypatch.setattr(lifecycle.time, "monotonic", lambda: float(next(clock)))
    monkeypatch.setattr(lifecycle.time, "sleep", lambda s: None)
    built = lifecycle.wait_for_index_build(service, timeout=3600, before=(0, [], 0))
    assert built["started"] == 1 and built["seconds"] == [600.0]


def test_a_growth_size_saves_its_recall_figures_before_its_cycles_and_restart(monkeypatch):
    # a 1M size's cycles and restart take a quarter of an hour: a run stopped there keeps its recall
    for name, value in {"index_builds": (0, [], 0), "send_batches": None, "wait_for": 1.0, "health": {},
                        "wait_for_index_build": {"started": 1}, "recall_latency": {"p95_ms": 40.0},
                        "web_rss": {"VmRSS": 1.0}}.items():
        monkeypatch.setattr(lifecycle, name, lambda *a, value=value, **k: value)
    saved = []

    def cycles(*args):
        raise KeyboardInterrupt  # stopped by hand during the cycles

    monkeypatch.setattr(lifecycle, "consolidation", cycles)
    row = {"memories": 10}
    args = SimpleNamespace(timeout=60, start_timeout=60)
    try:
        lifecycle.measure_size(None, row, ["text"], ["q"], 0, args, save=lambda: saved.append(dict(row)))
    except KeyboardInterrupt:
        pass
    assert len(saved) == 1 and saved[0]["recall_plain"] == {"p95_ms": 40.0} and "consolidation" not in saved[0]


def test_a_use_run_saves_each_phase_as_it_ends_with_the_probes_so_far(monkeypatch):
    # a 100k import on a slow day can leave no time for the singles: a run stopped there keeps the import
    class Service:
        def start(self, timeout):
            pass

    class Prober:
        def __init__(self, service, queries):
            self.phase, self.paused = "start", SimpleNamespace(set=lambda: None, clear=lambda: None)

        def start(self):
            pass

        def stop(self):
            pass

        def summary(self):
            return {self.phase: {"recall": {"count": 1}}}

    for name, value in {"raw_model_rate": {"rate": 1.0}, "slack_texts": ["a"], "conversation_turns": [{"content": "t"}],
                        "quiet_start": [], "questions": ["q"], "import_export": {"imported": 1}, "send_batches": None,
                        "wait_for": 1.0, "keep_store": None, "EmbeddedService": Service()}.items():
        monkeypatch.setattr(lifecycle, name, lambda *a, value=value, **k: value)
    monkeypatch.setattr(lifecycle, "Prober", Prober)

    def singles(*args):
        raise KeyboardInterrupt  # stopped by hand during the singles

    monkeypatch.setattr(lifecycle, "store_singles", singles)
    saved = []
    args = SimpleNamespace(exports="r-contributors", singles=1, memories=0, raw_texts=0, timeout=60, start_timeout=60,
                           clients=1, keep=None)
    try:
        lifecycle.run_use(args, save=saved.append)
    except KeyboardInterrupt:
        pass
    assert len(saved) == 2  # the import alone, then the import under recall
    assert saved[0]["partial"] is True and saved[0]["phases"]["import"]["memories"] == 1
    assert saved[1]["phases"]["import_probed"]["memories"] == 1  # as many again as the exports held
    assert saved[1]["probes"] == {"import_probed": {"recall": {"count": 1}}}


def test_the_prober_keeps_each_phases_slowest_samples_with_when_they_were_sent():
    prober = lifecycle.Prober(service=None, queries=["q"])
    for phase, seconds, at in [("import", 0.02, 1_800_000_000.0), ("import", 0.7, 1_800_000_001.5),
                               ("import", 0.1, 1_800_000_002.0), ("idle", 0.3, 1_800_000_003.0)]:
        prober.samples.append((phase, "recall", seconds, 200))
        prober.sent_at.append(at)
    summary = prober.summary()
    assert [row["ms"] for row in summary["import"]["recall"]["slowest"]] == [700.0, 100.0, 20.0]
    assert summary["import"]["recall"]["slowest"][0]["sent"] == "2027-01-15T08:00:01.500+00:00"
    assert summary["idle"]["recall"]["max_ms"] == 300.0 and len(summary["idle"]["recall"]["slowest"]) == 1
    assert lifecycle.Prober(None, ["q"]).slowest("import", "recall", count=3) == []


def test_queue_drain_says_when_each_queue_last_held_messages():
    drain = lifecycle.QueueDrain(offset_s=2.0, every_s=5.0)
    for seconds, queues in [(0.0, {"enrich": 5, "similarity": 9}), (4.0, {"enrich": 0, "similarity": 3}),
                            (12.5, {"enrich": 1, "similarity": 1}), (20.0, {"enrich": 0, "similarity": 0})]:
        drain({"queues": queues}, seconds)
    report = drain.report()
    assert report["last_busy_s"] == {"enrich": 14.5, "similarity": 14.5}
    assert report["timeline"] == [{"s": 2.0, "enrich": 5, "similarity": 9}, {"s": 14.5, "enrich": 1, "similarity": 1},
                                  {"s": 22.0}]
    quiet = lifecycle.QueueDrain()
    quiet({"queues": {"enrich": 0}}, 1.0)
    assert quiet.report()["last_busy_s"] == {"enrich": None}


def test_the_store_probe_tables_each_rounds_plain_and_tag_scoped_recall():
    from ops.bench import probe_recall_store

    row = {"plain": {"p50_ms": 12.0, "p95_ms": 30.5, "max_ms": 41.0},
           "tagged": {"p50_ms": 9.0, "p95_ms": 20.0, "max_ms": 25.0}, "load": 1.5}
    table = probe_recall_store.render({"memory_count": 1000, "healthy_s": 3.0, "rounds": [row, row]})
    assert table.count("| 12.0 / 30.5 / 41.0 | 9.0 / 20.0 / 25.0 | 1.5 |") == 2 and table.startswith("1000 memories, the enricher paused")


def test_the_maintenance_probe_tables_recall_idle_and_during_the_run():
    from ops.bench import probe_maintenance_recall as probe

    assert probe.percentiles([float(n) for n in range(1, 101)]) == {"n": 100, "p50_ms": 50.0, "p95_ms": 95.0,
                                                                    "p99_ms": 99.0, "max_ms": 100.0}
    row = {"cycle": "sync", "commit": "abc1234", "status": "complete", "run_s": 20.5, "counts": {"vectors_checked": 9},
           "idle": probe.percentiles([30.0, 40.0]), "during_run": probe.percentiles([50.0, 90.0])}
    table = probe.render(row)
    assert table.startswith("sync at abc1234 (complete in 20.5 s")
    assert "| idle | 2 | 30.0 | 30.0 | 30.0 | 40.0 |" in table and "| during sync | 2 | 50.0 | 50.0 | 50.0 | 90.0 |" in table

    watcher = probe.StepWatcher(broker=None, run_id="r1", started=0.0)
    watcher.marks = [(0.0, -1), (1.0, 0), (3.0, 1)]
    assert watcher.split([0.5, 1.2, 2.9, 3.0, 9.0], [10.0, 20.0, 30.0, 40.0, 50.0]) == {-1: [10.0], 0: [20.0, 30.0], 1: [40.0, 50.0]}
    table = probe.render({**row, "by_phase": {"through phase 0": probe.percentiles([20.0, 30.0])}})
    assert "|   through phase 0 | 2 | 20.0 | 20.0 | 20.0 | 30.0 |" in table


def test_the_catch_up_probe_tables_each_phase_and_kind():
    from ops.bench import probe_catchup_recall as probe

    row = {"memories": 10_000, "stored_before": 103_000, "commit": "abc1234", "settings": {}, "recallable_s": 80.2,
           "catch_up_s": 61.5, "probes": {
               "catch-up": {"recall": {"count": 600, "p50_ms": 40.0, "p99_ms": 150.0, "max_ms": 300.0, "over_500_ms": 0, "errors": 0},
                            "health": {"count": 60, "p50_ms": 5.0, "p99_ms": 20.0, "max_ms": 25.0, "over_500_ms": 0, "errors": 0}},
               "idle": {"recall": {"count": 100, "p50_ms": 30.0, "p99_ms": 50.0, "max_ms": 60.0, "over_500_ms": 0, "errors": 1}}}}
    table = probe.render(row)
    assert table.startswith("10,000 new memories into 103,000 at abc1234")
    assert "recallable in 80.2 s, catch-up 61.5 s" in table.splitlines()[0]
    assert "| catch-up | recall | 600 | 40.0 | 150.0 | 300.0 | 0 | 0 |" in table
    assert "| catch-up | health | 60 | 5.0 | 20.0 | 25.0 | 0 | 0 |" in table and "| idle | recall | 100 |" in table
    assert "maintenance:" not in table
    row["maintenance"] = [{"kind": "sync", "trigger": "clock", "status": "complete", "started_at": "2026-12-07T14:30:05.1+00:00",
                           "duration_s": 212.4, "held_s": 150.0}]
    assert "maintenance: sync (clock) complete at 14:30:05, 212.4 s, held 150.0 s" in probe.render(row)
