"""The launcher starts the enrichment worker below the write path's priority."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import ops.serve as serve
from pipeline.config import Settings


# A parent that forks a child, as a dramatiq command forks its worker processes; it writes
# the child's pid to the file it is given.
FORKING = """
import os, sys, time
pid = os.fork()
if pid == 0:
    time.sleep(30)
else:
    open(sys.argv[1], "w").write(str(pid)); time.sleep(30)
"""


def test_a_child_spawned_nice_runs_that_many_steps_lower_and_so_does_what_it_forks(tmp_path):
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    pid_file = tmp_path / "pid"
    parent = serve.spawn_child([sys.executable, "-c", FORKING, str(pid_file)], dict(os.environ), nice=3)
    plain = serve.spawn_child([sys.executable, "-c", "import time; time.sleep(30)"], dict(os.environ))
    try:
        deadline = time.monotonic() + 20
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        forked = int(pid_file.read_text())
        assert os.getpriority(os.PRIO_PROCESS, parent.pid) == min(19, mine + 3)
        assert os.getpriority(os.PRIO_PROCESS, forked) == min(19, mine + 3)
        assert os.getpriority(os.PRIO_PROCESS, plain.pid) == mine
    finally:
        for process in (parent, plain):
            serve.kill_group(process)


def test_the_worker_is_started_nice_and_the_enricher_nicer_still(monkeypatch, tmp_path):
    supervisor = serve.Supervisor(Settings(MEMPIPE_DATA_DIR=str(tmp_path), EMBEDDED_BACKGROUND_NICE=2,
                                           EMBEDDED_ENRICHER_NICE=7))
    for server in (supervisor.broker, supervisor.graph):
        monkeypatch.setattr(server, "spawn", lambda *args, **kwargs: None)
        monkeypatch.setattr(server, "wait_ready", lambda *args, **kwargs: None)
    niceness: dict[int, int] = {}

    def spawn(args, env, nice=0):
        niceness[len(niceness)] = nice
        return subprocess.Popen(["true"])

    monkeypatch.setattr(serve, "spawn_child", spawn)
    supervisor.start()
    by_name = {name: niceness[position] for position, (name, _) in enumerate(supervisor.children)}
    assert by_name == {"worker": 2, "enricher": 9, "clock": 0, "web": 0}
    assert Settings().embedded_enricher_nice > 0 and Settings().embedded_background_nice > 0  # shipped on
    # capped at 19, the lowest priority there is (EMBEDDED_ENRICHER_NICE says so)
    assert Settings(EMBEDDED_BACKGROUND_NICE=15, EMBEDDED_ENRICHER_NICE=10).embedded_enricher_niceness == 19


def _started(monkeypatch, tmp_path, cores: set[int], **settings) -> dict[str, tuple[list[str], dict[str, str]]]:
    """What the launcher's start spawns, by child name: its command line and environment."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: cores)
    supervisor = serve.Supervisor(Settings(MEMPIPE_DATA_DIR=str(tmp_path), **settings))
    for server in (supervisor.broker, supervisor.graph):
        monkeypatch.setattr(server, "spawn", lambda *args, **kwargs: None)
        monkeypatch.setattr(server, "wait_ready", lambda *args, **kwargs: None)
    spawned: list[tuple[list[str], dict[str, str]]] = []

    def spawn(args, env, nice=0):
        spawned.append((args, env))
        return subprocess.Popen(["true"])

    monkeypatch.setattr(serve, "spawn_child", spawn)
    supervisor.start()
    return {name: spawned[position] for position, (name, _) in enumerate(supervisor.children)}


def test_the_write_path_gets_its_worker_processes_each_told_how_many_share_the_cores(monkeypatch, tmp_path):
    args, env = _started(monkeypatch, tmp_path, {0, 1})["worker"]
    assert args[args.index("--processes") + 1] == "1" and env["WORKER_PROCESSES"] == "1"  # shipped: one process
    for cores, expected in (({0}, 1), ({0, 1}, 2), ({0, 1, 2, 3, 4, 5, 6, 7}, 4)):  # 0: one per core, at most 4
        args, env = _started(monkeypatch, tmp_path, cores, EMBEDDED_WORKER_PROCESSES=0)["worker"]
        assert args[args.index("--processes") + 1] == str(expected)
        # each process reads the count to take its share of the cores as one-thread model passes
        assert env["WORKER_PROCESSES"] == str(expected)
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: cores)
        process = Settings(WORKER_PROCESSES=env["WORKER_PROCESSES"])
        assert process.resolved_embed_model_passes == max(1, len(cores) // expected)
        assert process.resolved_embed_torch_threads == 1
    args, env = _started(monkeypatch, tmp_path, {0, 1, 2, 3}, EMBEDDED_WORKER_PROCESSES=3)["worker"]
    assert args[args.index("--processes") + 1] == "3" and env["WORKER_PROCESSES"] == "3"
    enricher, _ = _started(monkeypatch, tmp_path, {0, 1}, EMBEDDED_WORKER_PROCESSES=0)["enricher"]
    assert enricher[enricher.index("--processes") + 1] == "1"
