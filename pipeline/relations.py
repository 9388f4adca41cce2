"""The relation-type registry: every edge type between :Memory nodes, as data.

Cypher cannot take a relationship type as a parameter, so a query that names a type takes
the name from this table, never from user input. ``authorable`` marks the eleven types
``POST /associate`` may create; the system types (``SIMILAR_TO``, ``PRECEDED_BY``,
``DISCOVERED``) are written by the pipeline and are readable and filterable only.
``default_expand`` marks the types that recall's ``expand_relations`` and
``GET /memories/{id}/related`` follow when the caller names none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class RelationType:
    name: str
    authorable: bool
    default_expand: bool
    supersedes: bool = False  # the edge says its source was replaced by its target
    symmetric: bool = False  # one edge per pair, stored from the smaller id to the larger
    description: str = ""


RELATION_TYPES: tuple[RelationType, ...] = (
    RelationType("RELATES_TO", True, True, description="general association"),
    RelationType("LEADS_TO", True, True, description="cause and effect"),
    RelationType("OCCURRED_BEFORE", True, True, description="temporal order"),
    RelationType("PREFERS_OVER", True, True, description="a preference of one thing over another"),
    RelationType("EXEMPLIFIES", True, True, description="an example of a pattern"),
    RelationType("CONTRADICTS", True, True, description="conflicting information"),
    RelationType("REINFORCES", True, True, description="supporting evidence"),
    RelationType("INVALIDATED_BY", True, True, supersedes=True, description="replaced by newer information"),
    RelationType("EVOLVED_INTO", True, True, supersedes=True, description="developed into"),
    RelationType("DERIVED_FROM", True, True, description="source or origin"),
    RelationType("PART_OF", True, True, description="member of a larger whole"),
    RelationType("SIMILAR_TO", False, False, symmetric=True, description="vector neighbours (system)"),
    RelationType("PRECEDED_BY", False, False, description="previous memory in the same scope (system)"),
    RelationType("DISCOVERED", False, False, description="found by consolidation (system)"),
)

BY_NAME: dict[str, RelationType] = {r.name: r for r in RELATION_TYPES}
ALL_TYPES: tuple[str, ...] = tuple(r.name for r in RELATION_TYPES)
AUTHORABLE_TYPES: tuple[str, ...] = tuple(r.name for r in RELATION_TYPES if r.authorable)
SYSTEM_TYPES: tuple[str, ...] = tuple(r.name for r in RELATION_TYPES if not r.authorable)
DEFAULT_EXPAND_TYPES: tuple[str, ...] = tuple(r.name for r in RELATION_TYPES if r.default_expand)
SUPERSEDING_TYPES: tuple[str, ...] = tuple(r.name for r in RELATION_TYPES if r.supersedes)

# A second line of defence: whatever reaches Cypher text is an upper-case identifier.
_SAFE_NAME = re.compile(r"^[A-Z][A-Z_]*$")
assert all(_SAFE_NAME.match(name) for name in ALL_TYPES)


def lookup(name: str) -> RelationType | None:
    """The registry entry for a caller-given name (case-insensitive), or None."""
    return BY_NAME.get(name.strip().upper()) if isinstance(name, str) else None


def known_types(names: list[str]) -> tuple[list[str], list[str]]:
    """Split caller-given names (case-insensitive) into registry types and unknown ones."""
    known, unknown = [], []
    for name in names:
        entry = lookup(name)
        if entry is None:
            unknown.append(name)
        elif entry.name not in known:
            known.append(entry.name)
    return known, unknown


def pattern(types: list[str] | tuple[str, ...]) -> str:
    """``:A|B|C`` for a Cypher relationship pattern; only registry names get through."""
    checked = [t for t in types if t in BY_NAME]
    if not checked:
        raise ValueError("no registered relation type given")
    return ":" + "|".join(checked)


def label(relation: RelationType) -> str:
    """The one name a Cypher write splices: checked against the registry, not trusted."""
    if BY_NAME.get(relation.name) is not relation:
        raise ValueError(f"{relation.name!r} is not a registered relation type")
    return relation.name
