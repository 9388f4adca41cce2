"""Finding a benchmark's JSON under ops/bench/results/ and saying when (and at which commit) it was made."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "results"


def newest(globs: tuple[str, ...], results: Path = RESULTS, since: float | None = None) -> Path | None:
    """The most recently written file matching any glob (and written after ``since``, if given)."""
    found = {p for g in globs for p in results.glob(g) if p.is_file()}
    if since is not None:
        found = {p for p in found if p.stat().st_mtime >= since}
    return max(found, key=lambda p: p.stat().st_mtime, default=None)


def _iso(value: str) -> tuple[str | None, bool]:
    """A date a benchmark wrote, in whichever of the forms they use: (ISO 8601 UTC, has a time of day)."""
    for form, timed in (("%Y%m%dT%H%M%SZ", True), ("%Y-%m-%d", False)):
        try:
            return datetime.strptime(value, form).replace(tzinfo=timezone.utc).isoformat(), timed
        except ValueError:
            pass
    try:
        return datetime.fromisoformat(value).isoformat(), True
    except ValueError:
        return None, False


def _first(data: dict, paths: tuple[tuple[str, ...], ...]) -> str | None:
    for path in paths:
        node = data
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, str) and node:
            return node
    return None


DATE_KEYS = (("measured_at",), ("date",), ("at",), ("when",), ("machine", "date"), ("provenance", "date"))
COMMIT_KEYS = (("commit",), ("machine", "commit"), ("provenance", "commit"))


def provenance(data: dict, mtime: float) -> dict:
    """The JSON's own date and commit; where it has no date (or only a day), the file's mtime, and it says so."""
    written = _first(data, DATE_KEYS)
    date, timed = _iso(written) if written else (None, False)
    modified = datetime.fromtimestamp(mtime, timezone.utc).replace(microsecond=0).isoformat()
    if date and not timed and modified[:10] == date[:10]:
        date, source = modified, "json day, file mtime"  # the same day: the mtime adds the time
    else:
        source = "json" if date else "file mtime"
    return {"date": date or modified, "date_from": source, "commit": _first(data, COMMIT_KEYS)}


def read(path: Path) -> tuple[dict, dict]:
    """(the JSON, its provenance) of one result file."""
    data = json.loads(path.read_text())
    stat = path.stat()
    return data, {"file": path.name, "mtime": stat.st_mtime, **provenance(data, stat.st_mtime)}
