"""A BERT sentence model run over packed rows: several texts share a row, none pads to another's length.

A batch of texts one to a row pads every text to the batch's longest. A call of a few
single writes' labelled sentences (8 to 40 tokens each) wastes ~40 % of the model's work on
padding, and on the CPU that work costs as much as real tokens. Here the texts of a call are
packed, longest first, into rows of about ``row_tokens`` tokens. Inside a row each text
attends only to itself (a block-diagonal attention mask) and counts its positions from 0, so
its hidden states are those it would have alone; its vector is the mean of its own tokens,
normalised, as the model's Pooling(mean) and Normalize modules compute it. With
``row_tokens`` 0 each text has a row of its own: the usual padded batches.

Only for models this holds for: a BERT (``pipeline.bert``, absolute positions) followed by mean pooling
and normalisation, which ``pipeline.sentence_model`` checks when it loads one.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numpy as np

from pipeline.sentence_model import SentenceModel


def pack_rows(lengths: Sequence[int], row_tokens: int) -> list[list[int]]:
    """Indices of ``lengths`` packed into rows of at most ``row_tokens`` (a longer item gets a
    row to itself), first fit, longest first."""
    rows: list[list[int]] = []
    room: list[int] = []
    for index in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        length = lengths[index]
        for row, free in enumerate(room):
            if free >= length:
                rows[row].append(index)
                room[row] -= length
                break
        else:
            rows.append([index])
            room.append(max(row_tokens, length) - length)
    return rows


def budget_batches(lengths: Sequence[int], token_budget: int, max_items: int) -> list[list[int]]:
    """Indices of ``lengths`` in batches, longest first: each holds at most ``max_items`` and
    ``token_budget`` padded tokens (its items × its longest); an item over the budget goes alone."""
    batches: list[list[int]] = []
    batch: list[int] = []
    for index in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        # longest first, so the batch's longest is its first item
        if batch and (len(batch) >= max_items or lengths[batch[0]] * (len(batch) + 1) > token_budget):
            batches.append(batch)
            batch = []
        batch.append(index)
    if batch:
        batches.append(batch)
    return batches


def balanced_parts(lengths: Sequence[int], parts: int) -> list[list[int]]:
    """Indices of ``lengths`` in at most ``parts`` groups of about equal total length (longest
    first, each to the lightest group); no group is empty."""
    groups: list[list[int]] = [[] for _ in range(max(1, min(parts, len(lengths))))]
    totals = [0] * len(groups)
    for index in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        lightest = totals.index(min(totals))
        groups[lightest].append(index)
        totals[lightest] += lengths[index]
    return [group for group in groups if group]


class PackedSentenceEncoder:
    """Normalised mean-pooled vectors of a BERT sentence model, texts packed into rows.

    With ``passes`` > 1 a call's texts are split into that many parts of about equal length,
    each packed and run on a thread of the encoder's own (one torch thread each, set by the
    caller), and calls made from several threads share those threads: at most ``passes``
    forward passes run at once in the process. With one pass, calls from several threads take
    turns. Side by side on one thread each, two passes kept
    two cores busier than one pass on two torch threads, whose OpenMP team waits for its
    slowest thread at every step (docs/benchmarks-log.md, issue 21, session 40).
    """

    def __init__(self, model: SentenceModel, row_tokens: int, token_budget: int, max_rows: int, passes: int = 1):
        self._model = model
        self._row_tokens = row_tokens
        self._token_budget = token_budget
        self._max_rows = max_rows
        # A tokenizer used from two threads at once can fail ("Already borrowed"). The
        # forward passes are bounded, not locked: by the pool's threads, or one at a time.
        self._tokenizer_lock = threading.Lock()
        self._passes = max(1, passes)
        self._pool = ThreadPoolExecutor(self._passes, thread_name_prefix="model-pass") if self._passes > 1 else None
        self._one_pass = threading.Lock()

    @property
    def passes(self) -> int:
        return self._passes

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """The texts' vectors. With one pass the caller's thread runs it, callers taking turns;
        with more, the encoder's threads do and the caller waits."""
        dimensions = self._model.dimensions
        out = np.empty((len(texts), dimensions), dtype=np.float32)
        if not texts:
            return out
        with self._tokenizer_lock:
            token_ids = self._model.token_ids(list(texts))
        if self._pool is None:
            with self._one_pass:
                self._encode_part(list(range(len(texts))), token_ids, out)
            return out
        parts = balanced_parts([len(ids) for ids in token_ids], self._passes)
        for done in [self._pool.submit(self._encode_part, part, token_ids, out) for part in parts]:
            done.result()
        return out

    def _encode_part(self, indices: list[int], token_ids: list[list[int]], out: np.ndarray) -> None:
        """Pack the texts at ``indices`` into rows, run them, write their vectors into ``out``."""
        import torch

        lengths = [len(token_ids[i]) for i in indices]
        rows = [[indices[i] for i in row] for row in pack_rows(lengths, self._row_tokens)]
        row_lengths = [sum(len(token_ids[i]) for i in row) for row in rows]
        with torch.inference_mode():  # thread-local: entered on the thread that runs the pass
            for batch in budget_batches(row_lengths, self._token_budget, self._max_rows):
                batch_rows = [rows[r] for r in batch]
                vectors = self._run(batch_rows, token_ids, row_lengths[batch[0]], out.shape[1])
                order = [index for row in batch_rows for index in row]
                out[order] = vectors.numpy()

    def _run(self, rows: list[list[int]], token_ids: list[list[int]], width: int, dimensions: int):
        """The vectors of the texts in ``rows`` (one forward pass), in the rows' order."""
        import torch

        count = sum(len(row) for row in rows)
        input_ids = torch.zeros((len(rows), width), dtype=torch.long)
        positions = torch.zeros_like(input_ids)
        # which text of the batch each position holds; padding is -1, a block of its own, so
        # no query row is all masked (that gives NaN)
        owner = torch.full((len(rows), width), -1, dtype=torch.long)
        text = 0
        for r, row in enumerate(rows):
            at = 0
            for index in row:
                ids = token_ids[index]
                end = at + len(ids)
                input_ids[r, at:end] = torch.tensor(ids)
                positions[r, at:end] = torch.arange(len(ids))
                owner[r, at:end] = text
                at, text = end, text + 1
        mask = (owner[:, :, None] == owner[:, None, :])[:, None]
        hidden = self._model.bert(input_ids=input_ids, attention_mask=mask, position_ids=positions,
                                  token_type_ids=torch.zeros_like(input_ids))
        real = owner >= 0
        sums = torch.zeros((count, dimensions), dtype=hidden.dtype).index_add_(0, owner[real], hidden[real])
        means = sums / torch.bincount(owner[real], minlength=count).unsqueeze(1)
        return torch.nn.functional.normalize(means, dim=1)
