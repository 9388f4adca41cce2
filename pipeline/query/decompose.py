"""auto_decompose: the query plus a few focused sub-queries (names, then topic keywords)."""

from __future__ import annotations

import re

from pipeline.query.keywords import extract_keywords

MAX_NAMES = 2
MAX_TOPICS = 3
# A capitalised word that does not open the sentence (sentence-initial capitals say nothing).
_NAME = re.compile(r"(?<![.?!]\s)(?<!^)\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)\b")
_POSSESSIVE = re.compile(r"'s\b")


def _names(query: str) -> list[str]:
    text = _POSSESSIVE.sub("", query.strip())
    found = [m.group(1) for m in _NAME.finditer(text)]
    return list(dict.fromkeys(found))[:MAX_NAMES]


def decompose(query: str) -> list[str]:
    """The original query, then each name alone and with topics, or the topic keywords alone."""
    names = _names(query)
    name_words = {w.lower() for n in names for w in n.split()}
    topics = [k for k in extract_keywords(_POSSESSIVE.sub("", query)) if k not in name_words][:MAX_TOPICS]
    queries = [query]
    if names:
        for name in names:
            queries.append(name)
            if topics:
                queries.append(" ".join([name, *topics]))
    else:
        queries += topics
    return list(dict.fromkeys(queries))
