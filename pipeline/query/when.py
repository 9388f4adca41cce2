"""Questions that ask *when*, and memories that say when.

A memory's timestamp says when it was written, not when what it tells happened: "I went to a
support group yesterday" answers "When did she go to the support group?" through its
timestamp *and* the word "yesterday". Among the memories that match a when-question's topic,
the ones that state a time (a relative day, a date, a weekday, "two weeks ago") are the ones
that can answer it; a topical match without one ("the support group was so powerful") usually
cannot. So a when-question gives candidates whose content states a time the ``time_mention``
component (``SEARCH_WEIGHT_TIME_MENTION``), a flat bonus that re-orders near-ties and never
outweighs a clearly better topical match.

Both checks read English words (as the keyword channel does): a regular expression over the
query, a word-by-word look at each candidate's content (cached: memories recur across queries).
"""

from __future__ import annotations

import re
from functools import lru_cache

# The question opens by asking for a time: "When did…", "How long ago…", "What year…".
_ASKS_WHEN = re.compile(
    r"^\s*(when|how long|what (year|month|date|day|time)|(in )?which (year|month|week|day))\b", re.IGNORECASE
)

_WEEKDAYS = {f"{day}day{s}" for day in ("mon", "tues", "wednes", "thurs", "fri", "satur", "sun") for s in ("", "s")}
_MONTHS = set("january february march april may june july august september october november december".split())
_UNITS = set("day days week weeks month months year years weekend weekends night nights".split())
_COUNTS = set("a an one two three four five six seven eight nine ten few several".split())
# Words that state a time on their own; "last", "next", "this", "past" do before one of _AFTER_LAST.
_ON_THEIR_OWN = {"yesterday", "today", "tonight", "tomorrow", "recently", "ago", "since", "weekend"} | _WEEKDAYS | _MONTHS
_AFTER_LAST = _UNITS | _WEEKDAYS | {"morning", "evening", "summer", "winter", "spring", "fall"}
_WORD = re.compile(r"[a-z0-9]+")
_YEAR = re.compile(r"(19|20)\d\d")


def asks_when(query: str | None) -> bool:
    return bool(query and _ASKS_WHEN.search(query))


@lru_cache(maxsize=20_000)  # the same memories come back query after query
def states_time(content: str | None) -> bool:
    """A relative day, "last/next/this <unit>", "<n> <units>", "ago", a weekday, a month, a year.

    Word by word rather than one big regular expression: a set lookup per word is much cheaper
    than an alternation of ~60 phrases tried at every word boundary.
    """
    if not content:
        return False
    words = _WORD.findall(content.lower())
    for index, word in enumerate(words):
        if word in _ON_THEIR_OWN or (len(word) == 4 and _YEAR.fullmatch(word)):
            return True
        following = words[index + 1] if index + 1 < len(words) else ""
        if word in ("last", "next", "this", "past") and following in _AFTER_LAST:
            return True
        if following in _UNITS and (word.isdigit() or word in _COUNTS):
            return True
        if word == "couple" and following == "of" and index + 2 < len(words) and words[index + 2] in _UNITS:
            return True
    return False
