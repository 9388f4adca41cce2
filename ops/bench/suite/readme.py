"""Where the suite's report is written: the full tables into docs/benchmarks.md, a summary into the README.

Both go between markers, so the text around them is kept; a unit test fails when either
drifts from ops/bench/results/suite.json.
"""

from __future__ import annotations

from pathlib import Path

from ops.bench.suite import render
from ops.bench.suite.machine import ROOT

README = ROOT / "README.md"
REPORT = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- suite:begin -->", "<!-- suite:end -->"
SUMMARY_BEGIN, SUMMARY_END = "<!-- summary:begin -->", "<!-- summary:end -->"


def block(text: str, begin: str = BEGIN, end: str = END) -> str:
    return text.split(begin, 1)[1].split(end, 1)[0].strip()


def replace_in(text: str, rendered: str, begin: str = BEGIN, end: str = END) -> str:
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{rendered}\n{end}{tail}"


def write(suite: dict, report: Path = REPORT, readme: Path = README) -> None:
    report.write_text(replace_in(report.read_text(), render.render(suite)))
    readme.write_text(replace_in(readme.read_text(), render.summary(suite), SUMMARY_BEGIN, SUMMARY_END))
