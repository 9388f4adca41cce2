"""The query without its names: a second embedding that weighs what is asked over whom it names.

In a chat between two people nearly every message is by or about one of them, and the short
ones often name the other ("What about Kate?", "Hey Kate!"). A question that names a person
("What are Kate's hobbies?") embeds close to those: with all-MiniLM-L6-v2 the name dominates a
short question's vector, and the answers ("I love skiing, it's my favorite sport") do not name
anyone. Recall therefore embeds the query a second time with its names left out ("What are
hobbies?") and searches with the normalised sum of both vectors (``RECALL_QUERY_NAMELESS_WEIGHT``
× the second): the name still counts, the topic counts as much.

A name here is a capitalised word (``Kate``, ``Turks``; with its possessive ``'s``) that does
not open a sentence; ``I``, acronyms (``LGBTQ``), months and weekdays are kept. When the query
has no such word, or nothing would be left, there is no second embedding.
"""

from __future__ import annotations

import re
from functools import lru_cache

_KEEP = {
    "I", "I'm", "I've", "I'd", "I'll",
    *"January February March April May June July August September October November December".split(),
    *"Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split(),
}
# Their abbreviations (REALTALK's questions write "5 Jan 2024") are not names either for the
# pronoun form (query/pronouns.py: "did I play 5 you 2024" is no question). ``without_names``
# still leaves them out: kept there, one REALTALK question lost its evidence (run 11 of issue 23).
ABBREVIATIONS = frozenset("Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec Mon Tue Tues Wed Thu Thur Thurs Fri Sat Sun".split())
# A title-case word (one capital, then lower-case letters), its possessive with it.
_TITLE_WORD = re.compile(r"\b([A-Z][a-z]+)(?:['’]s\b)?")
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+|\n)\s*[\"'“(]*$")


def name_spans(text: str, keep: frozenset[str] = ABBREVIATIONS) -> list[tuple[str, int, int, bool]]:
    """Each name in ``text`` (not one of ``keep``): the name, where its match starts and ends, whether it is possessive."""
    spans = []
    for match in _TITLE_WORD.finditer(text):
        word = match.group(1)
        if word in _KEEP or word in keep or _SENTENCE_START.search(text[: match.start()]):
            continue
        spans.append((word, match.start(), match.end(), match.end() > match.end(1)))
    return spans


@lru_cache(maxsize=4096)
def without_names(text: str | None) -> str | None:
    """``text`` with its names removed; None when it names none (or is only names)."""
    if not text:
        return None
    kept: list[str] = []
    last = 0
    removed = False
    for match in _TITLE_WORD.finditer(text):
        word = match.group(1)
        if word in _KEEP or _SENTENCE_START.search(text[: match.start()]):
            continue
        kept.append(text[last: match.start()])
        last = match.end()
        removed = True
    if not removed:
        return None
    kept.append(text[last:])
    stripped = re.sub(r"\s+([,.?!])", r"\1", re.sub(r"\s{2,}", " ", "".join(kept))).strip()
    return stripped if re.search(r"[A-Za-z]", stripped) else None
