"""The relation-type registry: every edge type between :Memory nodes, as data.

Cypher cannot take a relationship type as a parameter, so any query that names a type
takes it from here, never from user input. ``default_expand`` marks the types recall
follows for ``expand_relations`` and ``/memories/{id}/related`` by default; ``authorable``
marks those ``POST /associate`` may create (the system types are written by enrichment).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RelationType:
    name: str
    authorable: bool
    default_expand: bool
    supersedes: bool = False  # the edge says its source was replaced by its target


RELATION_TYPES: tuple[RelationType, ...] = (
    RelationType("RELATES_TO", True, True),
    RelationType("LEADS_TO", True, True),
    RelationType("OCCURRED_BEFORE", True, True),
    RelationType("PREFERS_OVER", True, True),
    RelationType("EXEMPLIFIES", True, True),
    RelationType("CONTRADICTS", True, True),
    RelationType("REINFORCES", True, True),
    RelationType("INVALIDATED_BY", True, True, supersedes=True),
    RelationType("EVOLVED_INTO", True, True, supersedes=True),
    RelationType("DERIVED_FROM", True, True),
    RelationType("PART_OF", True, True),
    RelationType("SIMILAR_TO", False, False),
    RelationType("PRECEDED_BY", False, False),
    RelationType("DISCOVERED", False, False),
)

BY_NAME: dict[str, RelationType] = {r.name: r for r in RELATION_TYPES}
ALL_TYPES: tuple[str, ...] = tuple(r.name for r in RELATION_TYPES)
AUTHORABLE_TYPES: tuple[str, ...] = tuple(r.name for r in RELATION_TYPES if r.authorable)
DEFAULT_EXPAND_TYPES: tuple[str, ...] = tuple(r.name for r in RELATION_TYPES if r.default_expand)
SUPERSEDING_TYPES: tuple[str, ...] = tuple(r.name for r in RELATION_TYPES if r.supersedes)


def known_types(names: list[str]) -> tuple[list[str], list[str]]:
    """Split caller-given names (case-insensitive) into registry types and unknown ones."""
    known, unknown = [], []
    for name in names:
        upper = name.strip().upper()
        (known if upper in BY_NAME else unknown).append(upper if upper in BY_NAME else name)
    return list(dict.fromkeys(known)), unknown


def pattern(types: list[str] | tuple[str, ...]) -> str:
    """``:A|B|C`` for a Cypher relationship pattern; only registry names get through."""
    checked = [t for t in types if t in BY_NAME]
    if not checked:
        raise ValueError("no registered relation type given")
    return ":" + "|".join(checked)
