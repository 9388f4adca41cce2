"""Shaping results and the recall response the way AutoMem clients read them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.query.candidates import Candidate

# Payload/node fields that are storage bookkeeping, not part of the memory a client sees.
_INTERNAL_FIELDS = ("id", "memory_id", "tags_lower", "lifecycle", "timestamp_epoch", "updated_epoch", "type_source", "metadata_text",
                    "metadata_json")


def public_memory(props: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in props.items() if k not in _INTERNAL_FIELDS}


@dataclass
class Scored:
    candidate: Candidate
    components: dict[str, Any]
    score: float
    original_score: float | None = None

    @property
    def id(self) -> str:
        return self.candidate.id


def _rounded(components: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 6) if isinstance(v, float) else v for k, v in components.items()}


def result_entry(row: Scored) -> dict[str, Any]:
    c = row.candidate
    entry: dict[str, Any] = {
        "id": c.id,
        "memory": public_memory(c.memory),
        "final_score": round(row.score, 6),
        "match_type": c.match_type,
        "score_components": _rounded(row.components),
        "relations": c.relations,
        "source": c.source,
        "match_score": round(c.match_score, 6),
        "original_score": round(row.original_score if row.original_score is not None else row.score, 6),
        "score": round(row.score, 6),
    }
    if c.query is not None:
        entry["_query"] = c.query
    if c.outside_tag_scope:
        entry["outside_tag_scope"] = True
    entry.update(c.extra)
    return entry
