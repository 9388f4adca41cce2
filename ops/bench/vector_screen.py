"""Screen ways of making a turn's vector offline: vector-only evidence recall@5/@10 on both corpora.

    python -m ops.bench.vector_screen [--corpora locomo-dev,realtalk-dev] [--cache /tmp/vscreen]

Every turn of each corpus is embedded in-process with the local model (all-MiniLM-L6-v2) in
several ways, every scored question is embedded whole, and each question ranks the turns of
its conversation by cosine alone (no keyword, BM25, neighbour or time bonus). What it can tell:
whether a way of embedding brings the evidence closer to the question, on LLM-written turns
(LoCoMo) and on real chats (REALTALK), and what it costs in embedded texts. What it cannot: the
full ranking's figure (``ops.bench.quality`` is the measure). Embeddings are cached under
``--cache`` (one file per corpus and way), so a re-run only ranks.

Ways (``base`` is what the embed stage stores today: the mean of the labelled sentences):

- ``whole``: the content embedded as one text; ``nolabel``: the text without ``"<speaker>: "``.
- ``base+nbr<a>``: base, plus ``a`` × the mean of the previous and next turns' base vectors,
  normalised (no extra model call: the neighbours' vectors exist).
- ``window``: previous, this and next turn embedded as one text (one more text per memory).
- ``base|nbrmax<b>``: query-time: cosine + ``b`` × the best cosine of the turns just before
  and after (in the conversation's order), whether or not they are candidates.
"""

from __future__ import annotations

import argparse
import os
from collections import defaultdict
from pathlib import Path

import numpy as np

from ops.bench.locomo import SCORED_CATEGORIES, evidence_recall, load, questions, turns
from ops.bench.quality import data_root

_LABEL_SPLIT = ": "


def _embed(cache: Path, key: str, texts: list[str], labelled: bool = False) -> np.ndarray:
    path = cache / f"{key}.npy"
    if path.exists():
        return np.load(path)
    from pipeline.embedding import LocalEmbedder
    from pipeline.labelled import embed_contents_f32

    embedder = _embed.embedder = getattr(_embed, "embedder", None) or LocalEmbedder(
        batch_size=64, torch_threads=len(os.sched_getaffinity(0)))
    vectors = embed_contents_f32(embedder, texts, labelled=labelled)
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    np.save(path, vectors)
    return vectors


def _neighbour_index(conv_of: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Index of the previous / next turn in the same conversation (self at the ends)."""
    n = len(conv_of)
    prev = np.array([i - 1 if i > 0 and conv_of[i - 1] == conv_of[i] else i for i in range(n)])
    nxt = np.array([i + 1 if i < n - 1 and conv_of[i + 1] == conv_of[i] else i for i in range(n)])
    return prev, nxt


def screen(corpus: str, cache: Path) -> dict[str, dict[str, tuple[float, float]]]:
    conversations = load(data_root() / corpus)
    bodies = [(name, b) for name, data in conversations for b in turns(name, data)]
    contents = [b["content"] for _, b in bodies]
    conv_of = [name for name, _ in bodies]
    dia = [b["metadata"]["dia_id"] for _, b in bodies]
    qs = [q for name, data in conversations for q in questions(name, data)]
    prev, nxt = _neighbour_index(conv_of)
    nolabel = [c.split(_LABEL_SPLIT, 1)[1] if _LABEL_SPLIT in c else c for c in contents]
    window = ["\n".join(dict.fromkeys([contents[prev[i]], contents[i], contents[nxt[i]]])) for i in range(len(contents))]

    base = _embed(cache, f"{corpus}-base", contents, labelled=True)
    ways: dict[str, np.ndarray] = {
        "base": base,
        "whole": _embed(cache, f"{corpus}-whole", contents),
        "nolabel": _embed(cache, f"{corpus}-nolabel", nolabel),
        "window": _embed(cache, f"{corpus}-window", window),
    }
    for a in (0.2, 0.35, 0.5):
        mixed = base + a * (base[prev] + base[nxt]) / 2
        ways[f"base+nbr{a}"] = mixed / np.linalg.norm(mixed, axis=1, keepdims=True)
    mixed = ways["base"] + 0.5 * ways["window"]
    ways["base+window0.5"] = mixed / np.linalg.norm(mixed, axis=1, keepdims=True)
    query_vectors = _embed(cache, f"{corpus}-queries", [q.text for q in qs])

    rows: dict[str, list[tuple[int, float, float]]] = defaultdict(list)
    members = defaultdict(list)
    for i, name in enumerate(conv_of):
        members[name].append(i)
    for qi, q in enumerate(qs):
        idx = np.array(members[q.conversation])

        def score(cosines: np.ndarray, label: str) -> None:
            order = idx[np.argsort(-cosines[idx], kind="stable")]
            ranked = [dia[i] for i in order[:10]]
            rows[label].append((q.category, evidence_recall(q.evidence, ranked, 5), evidence_recall(q.evidence, ranked, 10)))

        for label, vectors in ways.items():
            score(vectors @ query_vectors[qi], label)
        cos = base @ query_vectors[qi]
        for b in (0.1, 0.2, 0.3):
            score(cos + b * np.maximum(cos[prev], cos[nxt]), f"base|nbrmax{b}")
    out = {}
    for label, items in rows.items():
        by: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for category, r5, r10 in items:
            by[SCORED_CATEGORIES[category]].append((r5, r10))
            by["overall"].append((r5, r10))
        out[label] = {c: (float(np.mean([x[0] for x in v])), float(np.mean([x[1] for x in v]))) for c, v in by.items()}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", default="locomo-dev,realtalk-dev")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/vscreen"))
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    for corpus in args.corpora.split(","):
        figures = screen(corpus, args.cache)
        names = [c for c in SCORED_CATEGORIES.values() if c in figures["base"]] + ["overall"]
        print(f"\n{corpus}, vector only, recall@5 / recall@10\n")
        print("| vector | " + " | ".join(names) + " |")
        print("|---" * (len(names) + 1) + "|")
        for label, row in figures.items():
            print(f"| {label} | " + " | ".join(f"{row[n][0]:.3f} / {row[n][1]:.3f}" for n in names) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
