"""Finding a benchmark's JSON under ops/bench/results/ and saying when (and at which commit) it was made."""

from __future__ import annotations

import hashlib
import json
import subprocess
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


def provenance(data: dict, mtime: float, stamp_from: str = "file mtime") -> dict:
    """The JSON's own date and commit; where it has no date (or only a day), ``mtime`` — the
    file's, or the time of the commit that last wrote it (``stamp_from`` says which) — and it
    says so."""
    written = _first(data, DATE_KEYS)
    date, timed = _iso(written) if written else (None, False)
    modified = datetime.fromtimestamp(mtime, timezone.utc).replace(microsecond=0).isoformat()
    if date and not timed and modified[:10] == date[:10]:
        date, source = modified, f"json day, {stamp_from}"  # the same day: the stamp adds the time
    else:
        source = "json" if date else stamp_from
    return {"date": date or modified, "date_from": source, "commit": _first(data, COMMIT_KEYS)}


def committed_at(path: Path) -> float | None:
    """When the commit that last wrote ``path`` was made, if the file is committed and unchanged
    since: a clone's mtimes are all the time of the checkout, not of the measurement."""
    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", *args, "--", path.name], cwd=path.parent, capture_output=True, text=True,
                                  timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    if git("status", "--porcelain", "--ignored") or not git("ls-files"):
        return None  # changed, untracked or ignored: its mtime is the best there is
    stamp = git("log", "-1", "--format=%ct")
    return float(stamp) if stamp else None


def read(path: Path) -> tuple[dict, dict]:
    """(the JSON, its provenance) of one result file; ``sha256`` tells a re-render it is the same file."""
    raw = path.read_bytes()
    data = json.loads(raw)
    mtime = path.stat().st_mtime
    stamp = provenance(data, mtime)
    if stamp["date_from"] != "json":  # the JSON does not say when: ask git before trusting the mtime
        committed = committed_at(path)
        if committed is not None:
            stamp = provenance(data, committed, "git commit")
    return data, {"file": path.name, "mtime": mtime, "sha256": hashlib.sha256(raw).hexdigest(), **stamp}
