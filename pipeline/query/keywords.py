"""Query keywords: lower-cased word tokens without stop words, in query order."""

from __future__ import annotations

import re
from functools import lru_cache

from pipeline.limits import FULLTEXT_MAX_TERMS

_WORD = re.compile(r"[a-z0-9][a-z0-9_\-']*")
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves did does what's who's i'm it's don't""".split()
)


def extract_keywords(text: str | None) -> list[str]:
    if not text:
        return []
    seen: dict[str, None] = {}
    for token in _WORD.findall(text.lower()):
        token = token.strip("-'_")
        if len(token) >= 2 and token not in STOP_WORDS:
            seen.setdefault(token, None)
    return list(seen)


@lru_cache(maxsize=65_536)  # scoring stems every content word of every candidate; words repeat
def stem(word: str) -> str:
    """A light suffix strip so 'databases' meets 'database'; the full-text index stems properly."""
    for suffix in ("ies", "es", "s", "ing", "ed"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def fulltext_terms(keywords: list[str], max_terms: int = FULLTEXT_MAX_TERMS) -> list[str]:
    """Terms safe for the full-text query language: letters and digits only, the first ``max_terms``.

    Each term is one more alternative the index matches and scores, so a pasted page of text
    searches by its first words rather than by hundreds of them.
    """
    terms: dict[str, None] = {}
    for keyword in keywords:
        for part in re.split(r"[^a-z0-9]+", keyword):
            if len(part) >= 2 and part not in STOP_WORDS:
                terms.setdefault(part, None)
                if len(terms) >= max_terms:
                    return list(terms)
    return list(terms)
