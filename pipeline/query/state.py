"""The current-state filter: hide what is no longer (or not yet) true, surface what replaced it.

A memory is not current when it is archived, expired (``t_invalid`` passed), not yet valid
(``t_valid`` ahead), or superseded: an outgoing INVALIDATED_BY / EVOLVED_INTO edge leads to
an active replacement. Chains resolve to their head (A→B→C surfaces C), at most
``MAX_HOPS`` hops, never looping on a cycle. A chain whose later links are all inactive
supersedes nothing: the memory stays, judged on its own validity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from pipeline.query.filters import parse_epoch

MAX_HOPS = 5

# memory ids → {id: (edge type, replacement memory)} for those that have a replacement edge
ReplacementLookup = Callable[[list[str]], dict[str, tuple[str, dict[str, Any]]]]


def validity_reason(memory: dict[str, Any], now_epoch: float) -> str | None:
    """Why a memory is not current judging by its own fields, or None when it is."""
    if memory.get("archived"):
        return "archived"
    invalid = parse_epoch(memory.get("t_invalid"))
    if invalid is not None and invalid <= now_epoch:
        return "expired"
    valid = parse_epoch(memory.get("t_valid"))
    if valid is not None and valid > now_epoch:
        return "not_yet_valid"
    return None


@dataclass(frozen=True)
class Supersession:
    suppressed_id: str
    relation: str  # type of the first edge out of the suppressed memory
    head: dict[str, Any]
    chain: tuple[str, ...]  # suppressed → ... → head


@dataclass
class StateReport:
    suppressed: list[dict[str, Any]] = field(default_factory=list)
    replacements: list[dict[str, Any]] = field(default_factory=list)
    degraded: bool = False
    # CONTRADICTS pairs touching returned memories (state_debug only): reported, never suppressed
    contradictions: list[dict[str, Any]] | None = None

    def summary(self, debug: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "current_only": True,
            "suppressed_count": len(self.suppressed),
            "replacement_count": len(self.replacements),
        }
        if self.degraded:
            body["graph_checked"] = False
        if debug:
            body["suppressed"] = self.suppressed
            body["replacements"] = self.replacements
            if self.contradictions is not None:
                body["contradiction_count"] = len(self.contradictions)
                body["contradictions"] = self.contradictions
        return body


def contradiction_details(
    edges: list[tuple[str, str, bool, float | None]], returned: set[str], suppressed: dict[str, str]
) -> list[dict[str, Any]]:
    """How each CONTRADICTS edge of a returned memory was handled.

    A contradiction says two memories disagree, not which one is current, so neither is
    hidden for it: ``other_returned`` says whether the client sees both sides, and
    ``other_suppressed`` names the reason when the other side was hidden for its own state.
    Each pair is reported once.
    """
    details, seen = [], set()
    for memory_id, other, outgoing, strength in edges:
        pair = frozenset((memory_id, other))
        if memory_id not in returned or pair in seen:
            continue
        seen.add(pair)
        entry: dict[str, Any] = {"id": memory_id, "contradicts": other, "direction": "outgoing" if outgoing else "incoming",
                                 "strength": strength, "other_returned": other in returned}
        if other in suppressed:
            entry["other_suppressed"] = suppressed[other]
        details.append(entry)
    return details


def resolve_heads(
    memory_ids: list[str], lookup: ReplacementLookup, now_epoch: float, admissible: Callable[[dict[str, Any]], bool]
) -> dict[str, Supersession]:
    """Follow replacement edges from each memory; one lookup per hop for all chains at once."""
    seen_edges: dict[str, tuple[str, dict[str, Any]] | None] = {}
    chains: dict[str, list[tuple[str, dict[str, Any]]]] = {m: [] for m in memory_ids}
    current = {m: m for m in memory_ids}
    open_chains = set(memory_ids)
    for _ in range(MAX_HOPS):
        wanted = sorted({current[m] for m in open_chains if current[m] not in seen_edges})
        if wanted:
            found = lookup(wanted)
            for memory_id in wanted:
                seen_edges[memory_id] = found.get(memory_id)
        for origin in list(open_chains):
            step = seen_edges.get(current[origin])
            visited = {origin, *(node["id"] for _, node in chains[origin])}
            if step is None or step[1]["id"] in visited:  # head reached, or a cycle closes
                open_chains.discard(origin)
                continue
            chains[origin].append(step)
            current[origin] = step[1]["id"]
        if not open_chains:
            break
    result: dict[str, Supersession] = {}
    for origin, chain in chains.items():
        active = [i for i, (_, node) in enumerate(chain) if validity_reason(node, now_epoch) is None and admissible(node)]
        if not active:
            continue
        last = active[-1]
        result[origin] = Supersession(
            suppressed_id=origin,
            relation=chain[0][0],
            head=chain[last][1],
            chain=(origin, *(node["id"] for _, node in chain[: last + 1])),
        )
    return result
