"""Questions that ask *when*, and memories that say when.

A memory's timestamp says when it was written, not when what it tells happened: "I went to a
support group yesterday" answers "When did she go to the support group?" through its
timestamp *and* the word "yesterday". Among the memories that match a when-question's topic,
the ones that state a time (a relative day, a date, a weekday, "two weeks ago") are the ones
that can answer it; a topical match without one ("the support group was so powerful") usually
cannot. So a when-question gives candidates whose content states a time the ``time_mention``
component (``SEARCH_WEIGHT_TIME_MENTION``), a flat bonus that re-orders near-ties and never
outweighs a clearly better topical match.

Both checks are regular expressions over the query and each candidate's content (English, as
the keyword channel is): a few microseconds per candidate.
"""

from __future__ import annotations

import re

# The question opens by asking for a time: "When did…", "How long ago…", "What year…".
_ASKS_WHEN = re.compile(
    r"^\s*(when|how long|what (year|month|date|day|time)|(in )?which (year|month|week|day))\b", re.IGNORECASE
)

_WEEKDAY = r"(mon|tues|wednes|thurs|fri|satur|sun)days?"
_MONTH = r"january|february|march|april|may|june|july|august|september|october|november|december"
_UNIT = r"(days?|weeks?|months?|years?|weekends?|nights?)"
_COUNT = r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|few|couple of|several)"
# Relative days, "last/next/this <unit>", "<n> <units>", "ago", weekdays, months, years.
_STATES_TIME = re.compile(
    rf"\b(yesterday|today|tonight|tomorrow|recently|ago|since|weekend|"
    rf"(last|next|this|past) ({_WEEKDAY}|{_UNIT}|morning|evening|summer|winter|spring|fall)|"
    rf"{_COUNT} {_UNIT}|{_WEEKDAY}|{_MONTH}|(19|20)\d\d)\b",
    re.IGNORECASE,
)


def asks_when(query: str | None) -> bool:
    return bool(query and _ASKS_WHEN.search(query))


def states_time(content: str | None) -> bool:
    return bool(content and _STATES_TIME.search(content))
