"""The README's Performance block, between markers, regenerated from ops/bench/results/suite.json."""

from __future__ import annotations

from pathlib import Path

from ops.bench.suite.machine import ROOT

README = ROOT / "README.md"
BEGIN, END = "<!-- suite:begin -->", "<!-- suite:end -->"


def block(text: str) -> str:
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


def replace_in(text: str, rendered: str) -> str:
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{rendered}\n{END}{tail}"


def write(rendered: str, path: Path = README) -> None:
    path.write_text(replace_in(path.read_text(), rendered))
