"""The launcher: a child is killed with everything it forked; stop and port arithmetic; store settings."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from ops.bench.suite.procs import alive
from ops.serve import kill_group, metrics_env, spawn_child, worker_shutdown_ms
from pipeline.stages import message_chunks
from pipeline.config import Settings

# A parent that forks a child which ignores SIGTERM, as a dramatiq command does with its
# worker processes; it prints the child's pid.
FORKING = """
import os, signal, sys, time
pid = os.fork()
if pid == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(120)
    os._exit(0)
print(pid, flush=True)
time.sleep(120)
"""


def test_a_killed_child_takes_what_it_forked_with_it():
    parent = subprocess.Popen([sys.executable, "-c", FORKING], stdout=subprocess.PIPE, text=True, start_new_session=True)
    forked = int(parent.stdout.readline())
    assert alive(forked)
    kill_group(parent)
    deadline = time.monotonic() + 10
    while alive(forked) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(forked), "the forked process outlived its parent"
    assert parent.returncode == -signal.SIGKILL


def test_killing_the_group_of_a_child_that_already_exited_is_harmless():
    child = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    child.wait()
    kill_group(child)
    assert child.returncode == 0
    assert os.getpgid(0) != child.pid


def test_a_child_gets_a_process_group_of_its_own_in_the_launchers_session():
    # Its own group: a terminal's Ctrl-C reaches only the launcher. The launcher's session: the
    # autogroup scheduler weighs nice values only within a session, so the niced worker yields
    # the CPU to the web only if they share one.
    child = spawn_child([sys.executable, "-c", "import time; time.sleep(30)"], dict(os.environ), nice=5)
    try:
        assert os.getsid(child.pid) == os.getsid(0)
        assert os.getpgid(child.pid) == child.pid != os.getpgid(0)
        assert os.getpriority(os.PRIO_PROCESS, child.pid) == os.getpriority(os.PRIO_PROCESS, 0) + 5
    finally:
        kill_group(child)


def test_workers_give_up_on_their_messages_before_the_launcher_would_kill_them():
    for stop_s in (1.0, 10.0, 60.0):
        assert worker_shutdown_ms(stop_s) < stop_s * 1000


def test_each_dramatiq_command_gets_its_own_exporter_port():
    settings = Settings(worker_metrics_port=9191)
    assert metrics_env(settings, 0) == {"WORKER_METRICS_PORT": "9191"}
    assert metrics_env(settings, 1) == {"WORKER_METRICS_PORT": "9192"}
    assert metrics_env(Settings(worker_metrics_port=0), 1) == {}  # off stays off


def test_the_worker_exporter_binds_loopback_unless_told_otherwise():
    assert Settings().worker_metrics_host == "127.0.0.1"


def test_embed_work_is_sent_one_provider_call_per_message():
    items = [{"id": str(n)} for n in range(130)]
    chunks = message_chunks(items, 64)
    assert [len(chunk) for chunk in chunks] == [64, 64, 2]
    assert [item for chunk in chunks for item in chunk] == items
    assert message_chunks([], 64) == []


def test_both_stores_log_with_a_snapshot_base_and_the_chosen_fsync(tmp_path):
    from ops.serve import Supervisor

    for fsync in ("everysec", "always"):
        supervisor = Supervisor(Settings(EMBEDDED_APPENDFSYNC=fsync, MEMPIPE_DATA_DIR=str(tmp_path)))
        for server in (supervisor.broker, supervisor.graph):
            args = " ".join(server.command())
            assert "--appendonly yes" in args and "--aof-use-rdb-preamble yes" in args
            assert f"--appendfsync {fsync}" in args


def test_enrichment_is_sent_in_messages_a_worker_can_finish_while_stopping(monkeypatch):
    from types import SimpleNamespace

    from pipeline import stages
    from pipeline.actors import enrich

    sent = []
    monkeypatch.setattr(enrich.enrich_memories, "send_with_options", lambda args, on_failure: sent.append(args[0]))
    svc = SimpleNamespace(chat=None, settings=Settings(), enrichment_stats=SimpleNamespace(queued=lambda ids: None))
    ids = [str(n) for n in range(300)]
    stages.send_enrich(svc, ids)
    assert [len(batch) for batch in sent] == [128, 128, 44] and sum(sent, []) == ids
    sent.clear()
    svc.chat = object()  # an LLM: about one rate window of calls per message
    stages.send_enrich(svc, ids[:25])
    assert [len(batch) for batch in sent] == [10, 10, 5]


def test_similar_to_is_sent_in_messages_the_web_can_finish_while_stopping(monkeypatch):
    from pipeline import stages
    from pipeline.actors import similarity

    sent = []
    monkeypatch.setattr(similarity.link_similar, "send_with_options", lambda args: sent.append(args[0]))
    items = [{"id": str(n), "vector_f32": "x"} for n in range(250)]
    stages.send_similar(items)
    assert [len(batch) for batch in sent] == [100, 100, 50] and sum(sent, []) == items
