"""BM25 over one query's candidate pool: the lexical half of the hybrid score.

The spec's ``keyword`` component is the share of query keywords found in the content, so a
common word ("go", "time") counts as much as a rare one ("LGBTQ", "Sweden") and a speaker's
name in every one of their turns lifts them all alike. BM25 weighs each term by how rare it
is among the candidates (IDF) and saturates repeats, so the turn that shares the query's
*distinctive* words rises. It is computed over the pool (vector hits plus full-text hits),
not the whole store: IDF then says what separates the candidates of this query, and the cost
stays a few milliseconds whatever the store's size.

``bm25s`` does the scoring; PyStemmer's Snowball stemmer (the one bm25s is built for) folds
"painting"/"painted"/"paints" together. Scores are divided by the pool's best so the
component lies in [0, 1] like the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import bm25s
import Stemmer

from pipeline.query.keywords import STOP_WORDS

_STOP_WORDS = sorted(STOP_WORDS)


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def tokens(texts: list[str]) -> list[list[str]]:
    return bm25s.tokenize(texts, stopwords=_STOP_WORDS, stemmer=_stemmer(), show_progress=False, return_ids=False)


@dataclass(frozen=True)
class PoolBM25:
    k1: float = 1.2
    b: float = 0.75

    def scores(self, query: str, documents: list[str]) -> list[float]:
        """BM25 of ``query`` against each document, scaled so the best is 1.0 (all 0 without a match)."""
        if not documents:
            return []
        wanted = list(dict.fromkeys(tokens([query])[0]))
        if not wanted:
            return [0.0] * len(documents)
        corpus = tokens(documents)
        if not any(corpus):
            return [0.0] * len(documents)
        index = bm25s.BM25(k1=self.k1, b=self.b)
        index.index(corpus, show_progress=False)
        known = [t for t in wanted if t in index.vocab_dict]
        if not known:
            return [0.0] * len(documents)
        raw = index.get_scores(known)
        best = float(raw.max())
        return [float(s) / best if best > 0 else 0.0 for s in raw]
