"""Learn the query adapter (pipeline/query/adapter.py) from the dev conversations.

    python -m ops.bench.train_query_adapter --out FILE [--corpora locomo-dev,realtalk-dev]
                                            [--cross-validate [--held-out-dir DIR]] [--weight-decay 0.03] [--epochs 20]
                                            [--strength 1]

Each conversation's turns are embedded as the pipeline stores them (labelled sentences, the
local model), each question as recall embeds it before the adapter (with its second form,
``RECALL_QUERY_NAMELESS_*``). The map ``W = I + A`` is fitted so that, among the turns of its
own conversation, a question's adapted vector lies nearest its evidence turns (a softmax over
the conversation's turns, the evidence's mean log-probability maximised), with ``A``'s squared
norm as the penalty that keeps ``W`` near the identity: a map that strays far from it learns
these conversations rather than how questions and answers are worded. The map written is
``I + strength × A``. Deterministic: full passes over the conversations in order, no sampling.

``--cross-validate`` first fits once per conversation on all the others and scores the one
left out: pure-vector evidence recall@10 (the vector channel alone, scoped to the
conversation), without and with the map — what a conversation the map never saw gains. With
``--held-out-dir`` each of those maps is kept as ``held-out-<conversation>.npz``, so the whole
ranking can be scored the same way (``ops.bench.quality_held_out``). Prints a table and writes
``ops/bench/results/train_query_adapter.json``. Tooling, not product: ``RECALL_QUERY_ADAPTER``
reads the file written, and none ships (docs/recall.md, "Real conversations").
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ops.bench.locomo import load, questions, turns
from ops.bench.quality import CORPORA, data_root
from pipeline.config import Settings
from pipeline.embedding import build_embedder
from pipeline.labelled import embed_contents_f32
from pipeline.query.adapter import save_adapter
from pipeline.query.candidates import CandidateSources, VectorStatus

RESULTS = Path(__file__).resolve().parent / "results" / "train_query_adapter.json"
MODEL = "all-MiniLM-L6-v2"  # the local provider's, recorded in the file
TEMPERATURE = 0.05  # the softmax's: cosines of one conversation's turns lie within a few tenths


@dataclass
class Conversation:
    name: str
    turns: np.ndarray  # (n, d) unit rows, as stored
    queries: np.ndarray  # (q, d) unit rows, as recall embeds them before the adapter
    evidence: list[list[int]]  # per question, the rows of its evidence turns
    categories: list[int]


def embed_corpus(corpus: str, settings: Settings) -> list[Conversation]:
    embedder = build_embedder(settings)
    sources = CandidateSources(graph=lambda: None, vectors=lambda: None, embedder=lambda: embedder,
                               dimensions=lambda: embedder.dimensions)
    found = []
    for name, data in load(data_root() / corpus):
        memories = list(turns(name, data))
        row_of = {m["metadata"]["dia_id"]: i for i, m in enumerate(memories)}
        asked = [q for q in questions(name, data) if any(e in row_of for e in q.evidence)]
        queries = [sources.query_vector(q.text, VectorStatus(), settings.recall_query_nameless_weight,
                                        settings.recall_query_nameless_form) for q in asked]
        found.append(Conversation(
            f"{corpus}/{name}", embed_contents_f32(embedder, [m["content"] for m in memories]),
            np.asarray(queries, dtype=np.float32), [[row_of[e] for e in q.evidence if e in row_of] for q in asked],
            [q.category for q in asked],
        ))
    return found


def fit(conversations: list[Conversation], weight_decay: float, epochs: int, strength: float = 1.0,
        learning_rate: float = 1e-3) -> np.ndarray:
    import torch

    torch.manual_seed(0)
    dims = conversations[0].turns.shape[1]
    shift = torch.zeros(dims, dims, requires_grad=True)
    optimiser = torch.optim.Adam([shift], lr=learning_rate)
    data = [(torch.from_numpy(c.turns), torch.from_numpy(c.queries), c.evidence) for c in conversations]
    for _ in range(epochs):
        for memories, queries, evidence in data:
            adapted = queries + queries @ shift.T
            adapted = adapted / adapted.norm(dim=1, keepdim=True)
            log_p = (adapted @ memories.T / TEMPERATURE).log_softmax(dim=1)
            loss = -torch.stack([log_p[i, rows].mean() for i, rows in enumerate(evidence)]).mean()
            loss = loss + weight_decay * (shift ** 2).sum()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    return (np.eye(dims, dtype=np.float32) + strength * shift.detach().numpy()).astype(np.float32)


def recall_at(conversation: Conversation, matrix: np.ndarray | None, k: int = 10) -> float:
    queries = conversation.queries if matrix is None else conversation.queries @ matrix.T
    queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    top = np.argsort(-(queries @ conversation.turns.T), axis=1)[:, :k]
    return float(np.mean([len(set(rows) & set(top[i].tolist())) / len(rows) for i, rows in enumerate(conversation.evidence)]))


def cross_validate(conversations: list[Conversation], weight_decay: float, epochs: int, strength: float,
                   keep: Path | None) -> list[dict]:
    rows = []
    for i, held_out in enumerate(conversations):
        matrix = fit(conversations[:i] + conversations[i + 1:], weight_decay, epochs, strength)
        if keep is not None:
            save_adapter(keep / f"held-out-{held_out.name.rsplit('/', 1)[-1]}.npz", MODEL, matrix)
        rows.append({"conversation": held_out.name, "questions": len(held_out.evidence),
                     "without": round(recall_at(held_out, None), 4), "with": round(recall_at(held_out, matrix), 4)})
        print(f"{held_out.name:28} {rows[-1]['questions']:>4} {rows[-1]['without']:>8.3f} {rows[-1]['with']:>8.3f}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.train_query_adapter", description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", default=",".join(CORPORA))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--weight-decay", type=float, default=0.03)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--strength", type=float, default=1.0, help="the share of the fitted shift kept (1 = all of it)")
    parser.add_argument("--cross-validate", action="store_true")
    parser.add_argument("--held-out-dir", type=Path, help="with --cross-validate: keep each held-out conversation's map here")
    args = parser.parse_args(argv)

    settings = Settings(embedding_provider="local")
    started = time.time()
    conversations = [c for corpus in args.corpora.split(",") for c in embed_corpus(corpus, settings)]
    print(f"embedded {len(conversations)} conversations in {time.time() - started:.1f} s", flush=True)
    record: dict = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "corpora": args.corpora,
                    "weight_decay": args.weight_decay, "epochs": args.epochs, "strength": args.strength,
                    "temperature": TEMPERATURE}
    if args.cross_validate:
        print(f"{'held out':28} {'q':>4} {'without':>8} {'with':>8}   (pure-vector evidence recall@10)")
        if args.held_out_dir:
            args.held_out_dir.mkdir(parents=True, exist_ok=True)
        record["cross_validation"] = cross_validate(conversations, args.weight_decay, args.epochs, args.strength,
                                                    args.held_out_dir)
    matrix = fit(conversations, args.weight_decay, args.epochs, args.strength)
    save_adapter(args.out, MODEL, matrix)
    record["out"] = str(args.out)
    record["shift_norm"] = round(float(np.linalg.norm(matrix - np.eye(len(matrix)))), 3)
    record["in_sample"] = [{"conversation": c.name, "without": round(recall_at(c, None), 4), "with": round(recall_at(c, matrix), 4)}
                           for c in conversations]
    print(f"wrote {args.out} (‖W − I‖ {record['shift_norm']})")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
