"""The most waiting clients can get from the model: the singles' turns in calls as small as the clients.

    python -m ops.bench.probe_singles_ceiling [--turns 1500] [--sizes 64,8,4] [--rounds 2] [--threads N] [--passes N]

N clients that each wait for their ``201`` before sending again never have more than N writes in
flight, so the embed stage never gets a call of more than N texts, however the pipeline is
built. This probe runs the local model alone, in this process, on the conversation turns the
lifecycle's singles phase stores (``ops.bench.lifecycle``), the way the embed stage embeds
them (``pipeline.labelled.embed_contents_f32``: labelled sentences, packed rows) and whole, in
calls of the workers' batch size and of each client count: texts/s and CPU per text, rounds
alternating. The gap between the batch-size call and a call of N is the ceiling a pipeline with
N waiting clients cannot pass. Prints a table and writes
``ops/bench/results/probe_singles_ceiling.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime, timezone
from pathlib import Path

from ops.bench.real import conversation_turns
from pipeline.config import Settings
from pipeline.embedding import LocalEmbedder
from pipeline.labelled import embed_contents_f32, labelled_sentences

RESULTS = Path(__file__).resolve().parent / "results"


def timed(embedder: LocalEmbedder, texts: list[str], size: int, labelled: bool) -> dict:
    calls = [texts[i:i + size] for i in range(0, len(texts), size)]
    wall, cpu = time.monotonic(), time.process_time()
    for call in calls:
        embed_contents_f32(embedder, call, labelled=labelled)
    wall, cpu = time.monotonic() - wall, time.process_time() - cpu
    return {"rate": round(len(texts) / wall, 1), "cpu_ms_per_text": round(cpu * 1000 / len(texts), 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.probe_singles_ceiling", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1500)
    parser.add_argument("--sizes", default="", help="call sizes (default: the batch size, 8 and 4)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=0, help="torch threads of each pass (default: the workers')")
    parser.add_argument("--passes", type=int, default=0, help="forward passes side by side (default: the workers')")
    parser.add_argument("--out", type=Path, default=RESULTS / "probe_singles_ceiling.json")
    args = parser.parse_args(argv)
    settings = Settings(embed_torch_threads=args.threads, embed_model_passes=args.passes)
    sizes = [int(s) for s in args.sizes.split(",") if s] or [settings.embed_batch_size, 8, 4]
    threads, passes = settings.resolved_embed_torch_threads, settings.resolved_embed_model_passes
    texts = [turn["content"] for turn in conversation_turns(args.turns)]
    embedder = LocalEmbedder(settings.embed_batch_size, threads, settings.embed_model_token_budget,
                             settings.embed_model_row_tokens, passes)
    embedder.embed_f32(texts[: settings.embed_batch_size])  # loaded and warm before anything is timed
    runs: dict[str, list[dict]] = {}
    for _ in range(args.rounds):
        for labelled in (True, False):
            for size in sizes:
                key = f"{'labelled sentences' if labelled else 'whole'}, calls of {size}"
                runs.setdefault(key, []).append(timed(embedder, texts, size, labelled))
    report = {"texts": len(texts), "labelled_pieces_per_text": round(sum(len(labelled_sentences(t) or [t]) for t in texts) / len(texts), 2),
              "batch_size": settings.embed_batch_size, "torch_threads": threads, "passes": passes, "runs": runs,
              "date": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{len(texts)} turns, {report['labelled_pieces_per_text']} labelled pieces a turn, {passes} passes of {threads} torch threads")
    print("| how | " + " | ".join(f"round {n + 1} /s (CPU ms a text)" for n in range(args.rounds)) + " |")
    print("|---|" + "---|" * args.rounds)
    for key, rows in runs.items():
        print(f"| {key} | " + " | ".join(f"{r['rate']} ({r['cpu_ms_per_text']})" for r in rows) + " |")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
