"""python -m ops.bench.suite [--quick] [--only section,...] [--render-only] [--write-docs]"""

from __future__ import annotations

import argparse
import json
import sys

from ops.bench.suite import machine, readme, report, render, runner, sources
from ops.bench.suite.sections import BY_NAME, SECTIONS

SUITE_JSON = sources.RESULTS / "suite.json"
SUITE_MD = sources.RESULTS / "suite.md"


def _previous() -> dict | None:
    try:
        return json.loads(SUITE_JSON.read_text())
    except (OSError, ValueError):
        return None


def _found() -> dict:
    """Each section's newest JSON under ops/bench/results/, read (None where there is none)."""
    found = {}
    for section in SECTIONS:
        path = sources.newest(section.globs)
        found[section.name] = sources.read(path) if path else None
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.suite", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="every section at small sizes (minutes, not hours)")
    parser.add_argument("--only", help=f"comma list of sections: {','.join(BY_NAME)}")
    parser.add_argument("--render-only", action="store_true",
                        help="run nothing: rebuild suite.json/suite.md from the JSON already in ops/bench/results/")
    parser.add_argument("--write-docs", "--write-readme", dest="write_docs", action="store_true",
                        help="also rewrite docs/benchmarks.md's tables and the README's summary")
    parser.add_argument("--timeout", type=int, help="seconds allowed per section (default: per section)")
    args = parser.parse_args(argv)
    only = [n for n in (args.only or "").split(",") if n]
    unknown = [n for n in only if n not in BY_NAME]
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; known: {', '.join(BY_NAME)}")

    # Start from what the last report knew: sections not run now keep their figures.
    sections = report.rebuild(_previous(), _found())
    if not args.render_only:
        for section in SECTIONS:
            if only and section.name not in only:
                continue
            sections[section.name] = runner.run(section, args.quick, args.timeout)
            _write(sections)  # after each section: a crash later loses nothing
    suite = _write(sections)
    if args.write_docs:
        readme.write(suite)
    print(render.document(suite))
    failed = [name for name, s in sections.items() if s["status"] == "failed"]
    if failed:
        print(f"suite: failed sections: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def _write(sections: dict) -> dict:
    suite = report.assemble(machine.machine(), machine.commit(), machine.now_iso(), sections)
    sources.RESULTS.mkdir(parents=True, exist_ok=True)
    SUITE_JSON.write_text(json.dumps(suite, indent=2, ensure_ascii=False) + "\n")
    SUITE_MD.write_text(render.document(suite))
    return suite


if __name__ == "__main__":
    raise SystemExit(main())
