"""The local model's rate by how a call's texts are batched: one batch, batches of a padded-token budget, packed rows.

    python -m ops.bench.probe_model_batches [--texts 400] [--rounds 2] [--configs 0/0,512/0,512/128]

Real texts from ``../shared/data``: messages of the two dev Slack exports and turns of
realtalk-dev and locomo-dev, embedded as the embed stage does (``embed_contents_f32``: labelled
turns sentence by sentence) through ``LocalEmbedder`` with the workers' model passes and torch
threads. Calls of ``EMBED_BATCH_SIZE`` texts (an import's embed message) and of 4 (what 8
waiting clients of single writes gather in a call), each with ``EMBED_MODEL_TOKEN_BUDGET``
(0 = the whole call as one batch, as sentence-transformers does by default) and
``EMBED_MODEL_ROW_TOKENS`` (0 = no packing), given as ``budget/row`` pairs. Rounds alternate
the order of the configurations so a changing load hits each alike. Prints texts per second
(the best round) and writes ``ops/bench/results/probe_model_batches.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from ops.bench.real import DATA, conversation_turns, slack_texts
from pipeline.config import Settings

RESULTS = Path(__file__).resolve().parent / "results"
EXPORTS = ("r-contributors", "houstondatavis")


def corpora(count: int) -> dict[str, list[str]]:
    turns = conversation_turns(100_000)
    return {
        "slack-dev": [t for export in EXPORTS for t in slack_texts(DATA / "slack-dev" / export)][:count],
        "realtalk-dev": [t["content"] for t in turns if t["id"].startswith("locomo-realtalk-dev")][:count],
        "locomo-dev": [t["content"] for t in turns if t["id"].startswith("locomo-locomo-dev")][:count],
    }


def rate(embedder, texts: list[str], call_size: int) -> float:
    from pipeline.labelled import embed_contents_f32

    started = time.monotonic()
    for start in range(0, len(texts), call_size):
        embed_contents_f32(embedder, texts[start:start + call_size])
    return len(texts) / (time.monotonic() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=400, help="texts of each corpus")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--configs", default="0/0,512/0,512/64,512/128,512/256",
                        help="EMBED_MODEL_TOKEN_BUDGET/EMBED_MODEL_ROW_TOKENS pairs")
    parser.add_argument("--out", type=Path, default=RESULTS / "probe_model_batches.json")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from pipeline.embedding import LocalEmbedder

    settings = Settings()
    configs = [tuple(int(part) for part in pair.split("/")) for pair in args.configs.split(",")]
    call_sizes = [settings.embed_batch_size, 4]
    embedders = {config: LocalEmbedder(settings.embed_batch_size, settings.resolved_embed_torch_threads, *config,
                                       passes=settings.resolved_embed_model_passes)
                 for config in configs}
    texts = corpora(args.texts)
    for embedder in embedders.values():
        embedder.embed_f32(texts["locomo-dev"][:64])  # warm-up
    best: dict[tuple[str, int, int], float] = {}
    for round_ in range(args.rounds):
        order = configs if round_ % 2 == 0 else configs[::-1]
        for name, corpus in texts.items():
            for call_size in call_sizes:
                for config in order:
                    key = (name, call_size, config)
                    best[key] = max(best.get(key, 0.0), rate(embedders[config], corpus, call_size))
    rows = [{"corpus": name, "call_size": call_size, "budget": budget, "row_tokens": row, "texts_per_s": round(value, 1)}
            for (name, call_size, (budget, row)), value in best.items()]
    print(f"texts per second, best of {args.rounds} rounds, {settings.resolved_embed_model_passes} passes of {settings.resolved_embed_torch_threads} torch threads")
    print("| corpus | texts per call | " + " | ".join(f"budget {b or 'off'}, rows {r or 'off'}" for b, r in configs) + " |")
    print("|---|---|" + "---|" * len(configs))
    for name in texts:
        for call_size in call_sizes:
            cells = [f"{best[(name, call_size, config)]:.1f}" for config in configs]
            print(f"| {name} | {call_size} | " + " | ".join(cells) + " |")
    report = {"rows": rows, "texts": {name: len(corpus) for name, corpus in texts.items()}, "rounds": args.rounds,
              "torch_threads": settings.resolved_embed_torch_threads, "passes": settings.resolved_embed_model_passes, "load_after": os.getloadavg()[0]}
    args.out.parent.mkdir(exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
