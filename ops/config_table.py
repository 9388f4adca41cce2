"""docs/config.md, generated from the settings groups so it cannot drift.

    python -m ops.config_table            # print the document
    python -m ops.config_table --write    # rewrite docs/config.md

The groups (pipeline/settings_groups.py) say which table lists a setting: the ``user`` tier is
the table a user reads; ``advanced`` and ``tuning`` follow in sections of their own.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pipeline.config import RecallProfile, Settings
from pipeline.settings_groups import SettingsGroup, Tier

DOCUMENT = Path(__file__).resolve().parents[1] / "docs" / "config.md"

INTRO = """# Configuration

Every setting is an environment variable (AutoMem's names where AutoMem has one, so an AutoMem
deployment's environment carries over). This page is generated from `pipeline/settings_groups.py`
by `python -m ops.config_table --write`; a test fails if it drifts.
"""

SECTIONS: dict[Tier, str] = {
    "user": """## Settings

What a deployment sets: tokens, addresses, stores, models, what recall returns, schedules.
""",
    "advanced": """## Advanced settings

Limits and recipes an operator changes with a reason. `RECALL_PROFILE` (above) chooses the
ranking recipe (`tuned` or `automem`, `pipeline/recall_profiles.py`) and so the defaults of the
profile's ranking fields (the table gives both where they differ); a variable set explicitly
wins over the profile.
""",
    "tuning": """## Tuning (benchmarks only)

Batching and scheduling knobs. The defaults are the values the benchmarks chose
(docs/benchmarks-log.md); a deployment leaves them alone, a benchmark turns them.
""",
}


def _default(name: str, field) -> str:
    value = field.default
    if value is None:
        return "—"
    automem = RecallProfile.AUTOMEM.settings().get(name, value)
    if automem != value:  # a field the recall profile decides: both recipes' values
        return f"`{value}` (automem: `{automem}`)"
    return f"`{value}`"


def _env_name(name: str, field) -> str:
    return (field.alias or name).upper()


def table(group: type[SettingsGroup]) -> str:
    rows = ["| variable | default | what it does |", "|---|---|---|"]
    for name, field in group.model_fields.items():
        rows.append(f"| `{_env_name(name, field)}` | {_default(name, field)} | {field.description or ''} |")
    return "\n".join(rows)


def settings_in(tier: Tier) -> int:
    return sum(len(g.model_fields) for g in Settings.groups() if g.tier == tier)


def render() -> str:
    parts = [INTRO]
    for tier, heading in SECTIONS.items():
        parts.append(heading)
        for group in (g for g in Settings.groups() if g.tier == tier):
            parts.append(f"### {group.title}\n\n{(group.__doc__ or '').strip()}\n\n{table(group)}\n")
    return "\n".join(parts)


def main() -> int:
    if "--write" in sys.argv:
        DOCUMENT.write_text(render())
    else:
        print(render(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
