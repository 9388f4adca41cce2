"""Collapse exact duplicates in a result pool.

Enrichment marks a memory whose normalised content repeats an earlier one in the same tag
scope with ``duplicate_of`` (the original's id). Recall shows each group once: its
best-scored member, with the others listed in ``deduped_from``.
"""

from __future__ import annotations

from pipeline.query.response import Scored


def group_key(row: Scored) -> str:
    return row.candidate.memory.get("duplicate_of") or row.id


def collapse_duplicates(rows: list[Scored]) -> tuple[list[Scored], int]:
    """(one row per duplicate group, in the given order; how many rows were folded away)."""
    best: dict[str, Scored] = {}
    folded: dict[str, list[str]] = {}
    for row in rows:
        key = group_key(row)
        kept = best.get(key)
        if kept is None:
            best[key] = row
            continue
        loser = row
        if row.score > kept.score:
            best[key], loser = row, kept
        folded.setdefault(key, []).append(loser.id)
    for key, ids in folded.items():
        extra = best[key].candidate.extra
        extra["deduped_from"] = sorted(set(extra.get("deduped_from", [])) | set(ids))
    kept_ids = {id(row) for row in best.values()}
    return [row for row in rows if id(row) in kept_ids], sum(len(ids) for ids in folded.values())
