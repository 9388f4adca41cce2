"""The suite's JSON report: one record per section, assembled and merged (pure functions).

A section record holds what the section's benchmark measured (``figures``, ``ratios``), where
its JSON came from (``source``: file, date, commit) and, when the suite ran it, how that run
went (``run``: command, mode, duration, load average before and after, return code).
"""

from __future__ import annotations

from ops.bench.suite.sections import SECTIONS, Section

SCHEMA = 1


def from_source(section: Section, data: dict, source: dict, run: dict | None = None) -> dict:
    record = {"title": section.title, "status": "ok", "run": run, "source": source, "error": None}
    try:
        record["figures"] = section.read(data)
        record["ratios"] = {k: v for k, v in section.ratios(record["figures"]).items() if v is not None}
    except Exception as exc:  # a benchmark changed its JSON: report it, keep the others
        record |= {"status": "failed", "figures": {}, "ratios": {},
                   "error": f"could not read {source.get('file')}: {type(exc).__name__}: {exc}"}
    return record


def failed(section: Section, error: str, run: dict | None) -> dict:
    return {"title": section.title, "status": "failed", "run": run, "source": None, "figures": {}, "ratios": {},
            "error": error}


def missing(section: Section) -> dict:
    return {"title": section.title, "status": "missing", "run": None, "source": None, "figures": {}, "ratios": {},
            "error": f"no result yet: run python -m ops.bench.suite --only {section.name}"}


def _same_file(a: dict | None, b: dict | None) -> bool:
    """Is ``b`` the result file ``a`` was read from? By content where both know it; records from
    before the hash by the date the JSON itself carries; else by mtime (a clone resets mtimes)."""
    if not (a and b and a.get("file") == b.get("file")):
        return False
    if a.get("sha256") and b.get("sha256"):
        return a["sha256"] == b["sha256"]
    if a.get("date_from") == "json" and b.get("date_from") == "json":
        return (a.get("date"), a.get("commit")) == (b.get("date"), b.get("commit"))
    return a.get("mtime") == b.get("mtime")


def rebuild(previous: dict | None, found: dict[str, tuple[dict, dict] | None]) -> dict[str, dict]:
    """Sections for --render-only: each from its newest JSON, keeping what the last report knew.

    A JSON the previous report was built from keeps that report's run record (mode, duration,
    load, commit); a newer JSON (a section re-measured alone) replaces it; a section with no
    JSON left keeps its previous record, so a checkout without the per-benchmark files still
    renders the committed report.
    """
    before = (previous or {}).get("sections", {})
    sections = {}
    for section in SECTIONS:
        old, hit = before.get(section.name), found.get(section.name)
        if hit:
            data, source = hit
            run = old.get("run") if old and _same_file(old.get("source"), source) else None
            sections[section.name] = from_source(section, data, source, run)
        elif old:
            sections[section.name] = old
        else:
            sections[section.name] = missing(section)
    return sections


def mode_of(sections: dict[str, dict]) -> str:
    modes = {(s.get("run") or {}).get("mode") for s in sections.values() if s.get("status") != "missing"}
    return modes.pop() if len(modes) == 1 and None not in modes else "mixed"


def assemble(machine: dict, commit: dict, generated_at: str, sections: dict[str, dict]) -> dict:
    return {
        "schema": SCHEMA,
        "generated_at": generated_at,
        "machine": machine,
        **commit,
        "mode": mode_of(sections),
        "sections": sections,
        "ratios": {name: s["ratios"] for name, s in sections.items() if s.get("ratios")},
    }
