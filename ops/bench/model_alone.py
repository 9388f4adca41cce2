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


def model_run_apart(texts: list[str], settings: Settings, torch_threads: int) -> dict:
    """``texts`` through the model in calls of the workers' batch size, in order: texts/s and CPU per text."""
    code = ("import json, sys, time; from pipeline.embedding import LocalEmbedder\n"
            "texts, batch, threads, budget, row = json.loads(sys.stdin.read())\n"
            "e = LocalEmbedder(batch, threads, budget, row); e.embed(texts[:batch])\n"
            "t, c = time.monotonic(), time.process_time()\n"
            "for i in range(0, len(texts), batch): e.embed(texts[i:i + batch])\n"
            "t, c = time.monotonic() - t, time.process_time() - c\n"
            "print(json.dumps({'texts': len(texts), 'seconds': round(t, 2), 'rate': round(len(texts) / t, 1),"
            " 'cpu_ms_per_text': round(c * 1000 / len(texts), 2), 'torch_threads': threads, 'token_budget': budget,"
            " 'row_tokens': row}))")
    payload = json.dumps([texts, settings.embed_batch_size, torch_threads, settings.embed_model_token_budget,
                          settings.embed_model_row_tokens])
    result = subprocess.run([sys.executable, "-c", code], input=payload, cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"}, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])
