"""The local model alone, run as the workers run it, in a child process.

The benchmarks hold the pipeline to this rate: the same texts, the workers' batch size, token
budget and packed rows, and a given number of torch threads. It runs in a child so torch never
loads into the benchmark's own process (whose later children would count its pages).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pipeline.config import Settings

ROOT = Path(__file__).resolve().parents[2]


_CHILD = """\
import json, sys, time
from concurrent.futures import ThreadPoolExecutor
from pipeline.embedding import LocalEmbedder
texts, batch, threads, budget, row, callers, barrier, passes = json.loads(sys.stdin.readline())
e = LocalEmbedder(batch, threads, budget, row, passes)
calls = [texts[i:i + batch] for i in range(0, len(texts), batch)]
pool = ThreadPoolExecutor(callers) if callers else None
run = (lambda cs: list(pool.map(e.embed_f32, cs))) if pool else (lambda cs: [e.embed_f32(c) for c in cs])
run([texts[:batch]] * max(1, callers))
if barrier:
    print("ready", flush=True)
    sys.stdin.readline()
t, c = time.monotonic(), time.process_time()
run(calls)
t, c = time.monotonic() - t, time.process_time() - c
print(json.dumps({"texts": len(texts), "seconds": round(t, 2), "rate": round(len(texts) / t, 1),
                  "cpu_ms_per_text": round(c * 1000 / len(texts), 2), "torch_threads": threads, "token_budget": budget,
                  "row_tokens": row, "caller_threads": callers, "model_passes": passes}))
"""


def _child(texts: list[str], settings: Settings, torch_threads: int, caller_threads: int, barrier: bool,
           passes: int = 1) -> subprocess.Popen:
    child = subprocess.Popen([sys.executable, "-c", _CHILD], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    child.stdin.write(json.dumps([texts, settings.embed_batch_size, torch_threads, settings.embed_model_token_budget,
                                  settings.embed_model_row_tokens, caller_threads, barrier, passes]) + "\n")
    child.stdin.flush()
    return child


def _result(child: subprocess.Popen) -> dict:
    out, err = child.communicate()
    if child.returncode:
        raise RuntimeError(f"the model's child process failed ({child.returncode}):\n{err[-2000:]}")
    return json.loads(out.strip().splitlines()[-1])


def model_run_apart(texts: list[str], settings: Settings, torch_threads: int, caller_threads: int = 0,
                    passes: int = 1) -> dict:
    """``texts`` through the model in calls of the workers' batch size, in order: texts/s and CPU per text.

    With ``caller_threads`` the calls come from that many threads, as a worker process's
    threads make them, instead of from one thread. With ``passes`` (``EMBED_MODEL_PASSES``)
    each call is split between that many forward passes side by side on threads of the
    model's own. Threads taking turns on a model with several torch threads are slower than
    one thread, and not from contention: each thread that opens an OpenMP region gets a libgomp
    team of its own, and once a process has more OpenMP threads than cores libgomp throttles
    its spin-waits between regions (docs/benchmarks-log.md, issue 21, session 27)."""
    return _result(_child(texts, settings, torch_threads, caller_threads, barrier=False, passes=passes))


def model_run_in_processes(texts: list[str], settings: Settings, processes: int, caller_threads: int = 0) -> dict:
    """The model as ``processes`` worker processes run it side by side, each with its share of
    the cores as torch threads: the calls dealt out in turn, every process loaded and warm
    before any starts, the rate = all texts over the slowest process's time."""
    threads = settings.model_copy(update={"worker_processes": processes}).resolved_embed_torch_threads
    batch = settings.embed_batch_size
    calls = [texts[i:i + batch] for i in range(0, len(texts), batch)]
    shares = [[t for call in calls[k::processes] for t in call] for k in range(processes)]
    children = [_child(share, settings, threads, caller_threads, barrier=True) for share in shares if share]
    try:
        for child in children:
            if child.stdout.readline().strip() != "ready":
                raise RuntimeError(f"the model's child process did not start:\n{child.stderr.read()[-2000:]}")
        for child in children:  # all loaded and warm: start them together
            child.stdin.write("go\n")
            child.stdin.flush()
        runs = [_result(child) for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
    seconds = max(run["seconds"] for run in runs)
    embedded = sum(run["texts"] for run in runs)
    cpu_ms = sum(run["cpu_ms_per_text"] * run["texts"] for run in runs)
    return {"texts": embedded, "seconds": seconds, "rate": round(embedded / seconds, 1),
            "cpu_ms_per_text": round(cpu_ms / embedded, 2), "torch_threads": threads,
            "token_budget": settings.embed_model_token_budget, "row_tokens": settings.embed_model_row_tokens,
            "caller_threads": caller_threads, "processes": len(runs)}


def model_run_arranged(texts: list[str], settings: Settings, processes: int, torch_threads: int,
                       caller_threads: int = 0, passes: int = 1) -> dict:
    """The model in one process with ``torch_threads``, or in ``processes`` side by side (each
    its share of the cores): the two arrangements a run of the benchmarks is measured in."""
    if processes > 1:
        return model_run_in_processes(texts, settings, processes, caller_threads)
    return model_run_apart(texts, settings, torch_threads, caller_threads, passes)
