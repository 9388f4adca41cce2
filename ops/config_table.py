"""The README's configuration table, generated from the Settings object so it cannot drift.

    python -m ops.config_table            # print the table
    python -m ops.config_table --write    # rewrite it in README.md between the markers
"""

from __future__ import annotations

import sys
from pathlib import Path

from pipeline.config import Settings

README = Path(__file__).resolve().parents[1] / "README.md"
BEGIN, END = "<!-- config-table:begin -->", "<!-- config-table:end -->"


def _default(field) -> str:
    value = field.default
    if value is None:
        return "—"
    return f"`{value}`"


def render() -> str:
    rows = ["| variable | default | what it does |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        env = (field.alias or name).upper()
        rows.append(f"| `{env}` | {_default(field)} | {field.description or ''} |")
    return "\n".join(rows)


def replace_in(text: str) -> str:
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{render()}\n{END}{tail}"


def main() -> int:
    if "--write" in sys.argv:
        README.write_text(replace_in(README.read_text()))
    else:
        print(render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
