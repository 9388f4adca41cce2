"""Natural-language time windows ("yesterday", "last 30 days", "since March") → [start, end].

Common relative forms are recognised directly (they need exact period arithmetic); anything
else that names a date goes through dateparser. An expression neither understands yields
``None``: the spec says an unknown ``time_query`` is ignored, not an error.

A connective ("since", "before", "between ... and ...") is read around plain phrases only,
never around another connective: each level would call dateparser again on almost the whole
text, so nesting without a bound let one request spend seconds (or the stack) here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import dateparser
from dateutil.relativedelta import relativedelta

from pipeline.limits import TIME_QUERY_MAX_NESTING

_UNITS = {
    "minute": relativedelta(minutes=1), "hour": relativedelta(hours=1), "day": relativedelta(days=1),
    "week": relativedelta(weeks=1), "month": relativedelta(months=1), "year": relativedelta(years=1),
}
_WORD_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10, "few": 3, "couple": 2, "couple of": 2}
_LAST_N = re.compile(
    r"^(?:in the )?(?:last|past|previous)\s+(?P<n>\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|few|couple(?: of)?)?\s*"
    r"(?P<unit>minute|hour|day|week|month|year)s?$"
)
_AGO = re.compile(r"^(?P<n>\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten)\s+(?P<unit>minute|hour|day|week|month|year)s?\s+ago$")
_THIS = re.compile(r"^this\s+(?P<unit>week|month|year)$")
_SINCE = re.compile(r"^(?:since|after|from)\s+(?P<rest>.+)$")
_BEFORE = re.compile(r"^(?:before|until|till|up to)\s+(?P<rest>.+)$")
_BETWEEN = re.compile(r"^(?:between|from)\s+(?P<a>.+?)\s+(?:and|to|until)\s+(?P<b>.+)$")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec")
_MONTH_ONLY = re.compile(r"^(?:in\s+)?(?P<month>" + "|".join(_MONTHS) + r")(?:\s+(?P<year>\d{4}))?$")
_YEAR_ONLY = re.compile(r"^(?:in\s+)?(?P<year>\d{4})$")


@dataclass(frozen=True)
class TimeWindow:
    start: datetime | None
    end: datetime | None

    def as_dict(self) -> dict[str, str | None]:
        return {"start": self.start.isoformat() if self.start else None, "end": self.end.isoformat() if self.end else None}


def _day_start(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _parse_point(text: str, now: datetime) -> datetime | None:
    parsed = dateparser.parse(
        text,
        languages=["en"],
        settings={"RELATIVE_BASE": now.replace(tzinfo=None), "PREFER_DATES_FROM": "past",
                  "RETURN_AS_TIMEZONE_AWARE": True, "TIMEZONE": "UTC", "TO_TIMEZONE": "UTC"},
    )
    return parsed.astimezone(timezone.utc) if parsed else None


def _month_window(month: str, year: str | None, now: datetime) -> TimeWindow | None:
    start = _parse_point(f"1 {month} {year}" if year else f"1 {month}", now)
    if start is None:
        return None
    start = _day_start(start.replace(day=1))
    if not year and start > now:  # "March" said in February means last March
        start -= relativedelta(years=1)
    return TimeWindow(start, start + relativedelta(months=1) - timedelta(microseconds=1))


def _number(raw: str | None) -> int:
    if not raw:
        return 1
    return int(raw) if raw.isdigit() else _WORD_NUMBERS.get(raw, 1)


def parse_time_query(expression: str | None, now: datetime | None = None) -> TimeWindow | None:
    """The window an expression names, or None when it names none we understand."""
    if not expression or not expression.strip():
        return None
    return _parse(" ".join(expression.lower().strip().split()), now or datetime.now(timezone.utc), 0)


def _parse(text: str, now: datetime, depth: int) -> TimeWindow | None:
    today = _day_start(now)
    if text in ("today", "so far today"):
        return TimeWindow(today, now)
    if text == "yesterday":
        return TimeWindow(today - timedelta(days=1), today - timedelta(microseconds=1))
    if text in ("recently", "recent", "lately"):
        return TimeWindow(now - timedelta(days=7), now)
    if match := _LAST_N.match(text):
        return TimeWindow(now - _UNITS[match["unit"]] * _number(match["n"]), now)
    if match := _THIS.match(text):
        unit = match["unit"]
        start = today - timedelta(days=today.weekday()) if unit == "week" else today.replace(day=1)
        if unit == "year":
            start = start.replace(month=1)
        return TimeWindow(start, now)
    if match := _AGO.match(text):
        point = now - _UNITS[match["unit"]] * _number(match["n"])
        return TimeWindow(_day_start(point), _day_start(point) + timedelta(days=1) - timedelta(microseconds=1))
    if match := _MONTH_ONLY.match(text):
        return _month_window(match["month"], match["year"], now)
    if match := _YEAR_ONLY.match(text):
        start = datetime(int(match["year"]), 1, 1, tzinfo=timezone.utc)
        return TimeWindow(start, start + relativedelta(years=1) - timedelta(microseconds=1))
    if depth < TIME_QUERY_MAX_NESTING:
        window = _connective(text, now, depth + 1)
        if window is not None:
            return window
    point = _parse_point(text, now)
    if point is None:
        return None
    start = _day_start(point)
    return TimeWindow(start, start + timedelta(days=1) - timedelta(microseconds=1))


def _connective(text: str, now: datetime, depth: int) -> TimeWindow | None:
    """since / before / between … and …, each around phrases parsed at ``depth``."""
    if match := _BETWEEN.match(text):
        first, second = _parse(match["a"], now, depth), _parse(match["b"], now, depth)
        if first and second:
            return TimeWindow(first.start, second.end)
    if match := _SINCE.match(text):
        inner = _parse(match["rest"], now, depth)
        if inner and inner.start:
            return TimeWindow(inner.start, now)
    if match := _BEFORE.match(text):
        inner = _parse(match["rest"], now, depth)
        if inner and inner.start:
            return TimeWindow(None, inner.start)
    return None
