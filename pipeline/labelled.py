"""Labelled content embedded sentence by sentence, each sentence carrying the label.

Chat transcripts, meeting notes and imported conversations store lines like
``"Caroline: I went to a support group yesterday. It was so powerful."``. Embedded whole, the
label is one word among many, and a long line's meaning is the blur of all its sentences; a
question about what Caroline did then matches a short line that names her better than the long
one that answers it. Embedding each sentence with the label in front of it
(``"Caroline: It was so powerful."``) and averaging the normalised sentence vectors keeps who
said it in every part of the vector and weighs each sentence alike.

On LoCoMo (``python -m ops.bench.quality``) this raises the vector component's evidence
recall; without the label in each sentence the average of the sentences is no better than the
whole line, so the label is the point. See docs/labelled-sentences.md.

Only content that starts with a short label (``Name:``, up to four words, then a space) and
holds two or more sentences takes this path; everything else is embedded whole. Queries are
always embedded whole.
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from pipeline.embedding import Embedder, embed_f32

# A label: a letter first, then up to four words of letters, digits, dots, apostrophes or
# hyphens, a colon, and white space. "https://…" (no space after the colon), "10:30" (a digit
# first) and "Re: the plan for Q3 and beyond:" (too long) are not labels.
_LABEL = re.compile(r"([^\W\d_][\w.'’-]*(?: [\w.'’-]+){0,3}):\s+(?=\S)")
# A sentence ends at . ! ? (or one of them and a closing quote or bracket) followed by white
# space, or at a line break.
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"'”’)\]]))\s+|\s*\n\s*")

MAX_SENTENCES = 32  # beyond this the rest stays one piece: a long text must not cost 100 embeddings


def split_label(text: str) -> tuple[str | None, str]:
    """``text``'s leading label (``"Caroline"`` of ``"Caroline: I went…"``) and what follows it; (None, text) without one."""
    label = _LABEL.match(text)
    return (None, text) if label is None else (label.group(1), text[label.end():])


def sentences(body: str) -> list[str]:
    """``body`` cut into sentences (at . ! ? and white space, or at a line break); blank pieces dropped."""
    return [piece for piece in _SENTENCE_END.split(body) if piece and not piece.isspace()]


def labelled_sentences(text: str) -> list[str] | None:
    """``text``'s sentences, each prefixed with its label; None when it has no label or one sentence."""
    label, body = split_label(text)
    if label is None:
        return None
    pieces = sentences(body)
    if len(pieces) < 2:
        return None
    if len(pieces) > MAX_SENTENCES:
        pieces = pieces[: MAX_SENTENCES - 1] + [" ".join(pieces[MAX_SENTENCES - 1:])]
    prefix = f"{label}: "
    return [prefix + piece.strip() for piece in pieces]


def _pieces(texts: Sequence[str]) -> tuple[list[str], list[tuple[int, int]]]:
    """What to embed (each labelled text's sentences, every other text whole) and each text's span."""
    pieces: list[str] = []
    spans: list[tuple[int, int]] = []
    for text in texts:
        sentences = labelled_sentences(text) or [text]
        spans.append((len(pieces), len(pieces) + len(sentences)))
        pieces.extend(sentences)
    return pieces, spans


def _mean_row(vectors: np.ndarray, start: int, end: int) -> np.ndarray:
    """The normalised mean of rows ``start:end`` (float64)."""
    mean = vectors[start:end].sum(axis=0)
    norm = float(np.sqrt(mean @ mean))
    return mean / norm if norm else vectors[start]


def embed_contents(embedder: Embedder, texts: Sequence[str], *, labelled: bool = True) -> list[list[float]]:
    """One vector per memory content, in order: labelled content as its sentences' mean.

    One provider call for all the texts and sentences together, so a batch stays a batch.
    """
    if not labelled:
        return embedder.embed(list(texts))
    pieces, spans = _pieces(texts)
    if len(pieces) == len(texts):  # nothing labelled: the provider's vectors as they are
        return embedder.embed(list(texts))
    vectors = np.asarray(embedder.embed(pieces), dtype=np.float64)
    return [vectors[start].tolist() if end - start == 1 else _mean_row(vectors, start, end).tolist()
            for start, end in spans]


def embed_contents_f32(embedder: Embedder, texts: Sequence[str], *, labelled: bool = True) -> np.ndarray:
    """``embed_contents`` as one float32 matrix (a row per content): what the embed stage packs.

    The provider's float32 rows pass through untouched (``pipeline.embedding.embed_f32``: no
    list of Python floats per text); a labelled content's mean is taken in float64, as above.
    """
    if not labelled:
        return embed_f32(embedder, list(texts))
    pieces, spans = _pieces(texts)
    if len(pieces) == len(texts):
        return embed_f32(embedder, list(texts))
    vectors = embed_f32(embedder, pieces).astype(np.float64)
    out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
    for row, (start, end) in enumerate(spans):
        out[row] = vectors[start] if end - start == 1 else _mean_row(vectors, start, end)
    return out
