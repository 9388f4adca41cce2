"""The query in the first person: the names it asks about put as the speakers would say them.

A conversation's turns are stored as their speakers wrote them ("Nebraas: I love pistachios"),
and a question to recall names the speaker in the third person ("What foods does Nebraas
like?"). ``without_names`` (query/names.py) leaves the name out ("What foods does like?"); this
form puts the pronoun the speaker would have used in its place: "What foods do I like?". The
first name the query names becomes "I" (after a preposition "me", with a possessive "my"), the
second "you" ("your"), any "A and B" "we" ("our"), and the auxiliary before a name agrees with
its pronoun ("does Nebraas" → "do I", "is Caroline's" → "is my"). Dates, ``I``, acronyms and a
capitalised word that opens a sentence are not names (the same test as ``without_names``, and
month and weekday abbreviations: "5 Jan 2024" stays).

Off by default (``RECALL_QUERY_NAMELESS_FORM=drop``): issue 23's run 11 measured it above the
names-left-out form on both dev corpora overall and on multi-hop, but below it on LoCoMo
single-hop recall@10 (docs/recall.md).

English only, like the rest of the name handling; a query in another language rarely has a
title-case word that is not a name, and then only that word changes.
"""

from __future__ import annotations

import re
from functools import lru_cache

from pipeline.query.names import name_spans

_PAIR = "{a}(?:['’]s)?\\s+and\\s+{b}(['’]s)?\\b"
# the auxiliary before a name, and its form for "I" / for "you" (lower case; a capital is kept)
_AUX = {"does": ("do", "do"), "is": ("am", "are"), "has": ("have", "have"), "was": ("was", "were")}
_PREPOSITIONS = frozenset("to with for about from of at by on in than like and or".split())
_WORD_BEFORE = re.compile(r"(\w+)\s+$")


def _cased(word: str, like: str) -> str:
    return word[:1].upper() + word[1:] if like[:1].isupper() else word


@lru_cache(maxsize=4096)
def in_first_person(text: str | None) -> str | None:
    """``text`` with the names it asks about as pronouns; None when it names none."""
    if not text:
        return None
    spans = name_spans(text)
    if not spans:
        return None
    order = list(dict.fromkeys(name for name, _, _, _ in spans))
    if len(order) >= 2:  # "Nicolas and Nebraas" → "we", "Caroline and Melanie's" → "our"
        for a, b in ((order[0], order[1]), (order[1], order[0])):
            text = re.sub(_PAIR.format(a=re.escape(a), b=re.escape(b)),
                          lambda m: "our" if m.group(1) else "we", text)
        spans = name_spans(text)
    out: list[str] = []
    last = 0
    for name, start, end, possessive in spans:
        first = order.index(name) == 0 if name in order else False
        before = text[last:start]
        if possessive:
            word = "my" if first else "your"
        else:
            word = "I" if first else "you"
            match = _WORD_BEFORE.search(before)
            if match and match.group(1).lower() in _AUX:
                aux = _AUX[match.group(1).lower()][0 if first else 1]
                before = before[: match.start(1)] + _cased(aux, match.group(1)) + before[match.end(1):]
            elif first and match and match.group(1).lower() in _PREPOSITIONS:
                word = "me"
        out.append(before + word)
        last = end
    out.append(text[last:])
    return "".join(out)
