"""BM25 over one query's candidates: the lexical half of the hybrid ranking.

The spec's ``keyword`` component is the share of query keywords found in the content, so a
common word ("go", "time") counts as much as a rare one ("LGBTQ", "Sweden"), and a speaker's
name in every one of their turns lifts them all alike. BM25 (Okapi) weighs each term by how
rare it is among the documents scored (IDF) and saturates repeats, so the memory that shares
the query's *distinctive* words rises. It runs over the documents at hand (the full-text
matches of one query, or its candidate pool), never the whole store: IDF then says what
separates the candidates of this query, and the cost stays a millisecond or two.

Why not bm25s or rank_bm25's index: they build a corpus index first (bm25s: scipy sparse
matrices), which is the right trade for a static corpus searched many times but costs far
more than the formula below for a few hundred documents scored once.
Stemming is PyStemmer's Snowball English stemmer, so "painting"/"painted"/"paints" meet.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import Stemmer

from pipeline.query.keywords import STOP_WORDS

_WORD = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


@lru_cache(maxsize=20_000)  # the same memories come back query after query; tokenising is most of the cost
def tokens(text: str) -> tuple[str, ...]:
    """Lower-cased word stems without stop words (apostrophes split: "Caroline's" → carolin, s)."""
    words = [w for w in _WORD.findall(text.lower()) if len(w) >= 2 and w not in STOP_WORDS]
    return tuple(_stemmer().stemWords(words))


@dataclass(frozen=True)
class PoolBM25:
    k1: float = 1.2
    b: float = 0.75

    def scores(self, query: str, documents: list[str]) -> list[float]:
        """BM25 of ``query`` against each document, scaled so the best is 1.0 (all 0 without a match)."""
        wanted = set(tokens(query))
        if not documents or not wanted:
            return [0.0] * len(documents)
        lengths, counts = [], []
        for document in documents:
            stems = tokens(document)
            lengths.append(len(stems))
            counts.append(Counter(s for s in stems if s in wanted))
        average = sum(lengths) / len(lengths) or 1.0
        frequency = Counter(term for found in counts for term in found)
        n = len(documents)
        # Okapi IDF with the +1 inside the log (Lucene's form): never negative, so a term in
        # most candidates counts for little rather than against them.
        idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in frequency.items()}
        raw = [
            sum(idf[t] * tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * length / average))
                for t, tf in found.items())
            for found, length in zip(counts, lengths)
        ]
        best = max(raw)
        return [s / best if best > 0 else 0.0 for s in raw]
