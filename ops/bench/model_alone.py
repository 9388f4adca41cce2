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


def model_run_apart(texts: list[str], settings: Settings, torch_threads: int, caller_threads: int = 0) -> dict:
    """``texts`` through the model in calls of the workers' batch size, in order: texts/s and CPU per text.

    With ``caller_threads`` the calls come from that many threads taking turns, as a worker
    process's threads make them, instead of from one thread. It is slower, and not from
    contention: each thread that opens an OpenMP region gets a libgomp team of its own, and
    once a process has more OpenMP threads than cores libgomp throttles its spin-waits
    between regions (docs/benchmarks-log.md, issue 21, session 27)."""
    code = ("import json, sys, time; from concurrent.futures import ThreadPoolExecutor\n"
            "from pipeline.embedding import LocalEmbedder\n"
            "texts, batch, threads, budget, row, callers = json.loads(sys.stdin.read())\n"
            "e = LocalEmbedder(batch, threads, budget, row)\n"
            "calls = [texts[i:i + batch] for i in range(0, len(texts), batch)]\n"
            "pool = ThreadPoolExecutor(callers) if callers else None\n"
            "run = (lambda cs: list(pool.map(e.embed_f32, cs))) if pool else (lambda cs: [e.embed_f32(c) for c in cs])\n"
            "run([texts[:batch]] * max(1, callers))\n"
            "t, c = time.monotonic(), time.process_time()\n"
            "run(calls)\n"
            "t, c = time.monotonic() - t, time.process_time() - c\n"
            "print(json.dumps({'texts': len(texts), 'seconds': round(t, 2), 'rate': round(len(texts) / t, 1),"
            " 'cpu_ms_per_text': round(c * 1000 / len(texts), 2), 'torch_threads': threads, 'token_budget': budget,"
            " 'row_tokens': row, 'caller_threads': callers}))")
    payload = json.dumps([texts, settings.embed_batch_size, torch_threads, settings.embed_model_token_budget,
                          settings.embed_model_row_tokens, caller_threads])
    result = subprocess.run([sys.executable, "-c", code], input=payload, cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"}, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])
