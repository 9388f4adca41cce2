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
from datetime import datetime, timezone
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


# --- Dates the query names ------------------------------------------------------------------
# "What did she buy on 7 Jan 2024?", "Who did Maria have dinner with on May 3, 2023?", "What
# setback did Melanie face in October 2023?": the question names when, and the memories that
# tell it were written then (a chat's turns carry their message's time). A candidate whose
# timestamp falls in the named day (or the day after: "yesterday I…") or month (or the first
# days after it) gains SEARCH_WEIGHT_DATE_MATCH. Only absolute dates: a relative one ("last
# week") is relative to when the question is asked, which the memories' times need not share.
_MONTH_NUMBERS = {name: number for number, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
    ("december", "dec")), start=1) for name in names}
_MONTH = r"(" + "|".join(sorted(_MONTH_NUMBERS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR4 = r"((?:19|20)\d\d)"
_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}(?:\s+of)?\s+{_MONTH},?\s+{_YEAR4}\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR4}\b", re.IGNORECASE)
_MONTH_YEAR = re.compile(rf"\b{_MONTH},?\s+{_YEAR4}\b", re.IGNORECASE)
_ISO_DAY = re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")
DAY_SPAN_S = 2 * 86_400  # the day and the next: "yesterday" told the day after
MONTH_GRACE_S = 3 * 86_400  # a month's events told in the first days of the next


def _day_window(year: int, month: int, day: int) -> tuple[float, float] | None:
    try:
        start = datetime(year, month, day, tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None
    return start, start + DAY_SPAN_S


def _month_window(year: int, month: int) -> tuple[float, float]:
    start = datetime(year, month, 1, tzinfo=timezone.utc).timestamp()
    end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=timezone.utc).timestamp()
    return start, end + MONTH_GRACE_S


@lru_cache(maxsize=4096)
def named_periods(query: str | None) -> tuple[tuple[float, float], ...]:
    """The [start, end) epoch windows of the absolute days and months ``query`` names (UTC)."""
    if not query or not any(ch.isdigit() for ch in query):
        return ()
    windows: list[tuple[float, float]] = []
    taken: list[tuple[int, int]] = []
    for pattern, order in ((_DAY_MONTH_YEAR, "dmy"), (_MONTH_DAY_YEAR, "mdy")):
        for match in pattern.finditer(query):
            values = dict(zip(order, match.groups()))
            window = _day_window(int(values["y"]), _MONTH_NUMBERS[values["m"].lower()], int(values["d"]))
            if window:
                windows.append(window)
                taken.append(match.span())
    for match in _ISO_DAY.finditer(query):
        window = _day_window(int(match.group(1)), int(match.group(2)), int(match.group(3)))
        if window:
            windows.append(window)
            taken.append(match.span())
    for match in _MONTH_YEAR.finditer(query):
        if not any(start <= match.start() < end for start, end in taken):  # "May 3, 2023" is a day, not May
            windows.append(_month_window(int(match.group(2)), _MONTH_NUMBERS[match.group(1).lower()]))
    return tuple(windows)


def in_periods(epoch: float | None, windows: tuple[tuple[float, float], ...]) -> bool:
    return epoch is not None and any(start <= epoch < end for start, end in windows)
