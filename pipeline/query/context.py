"""Context hints: an unweighted bonus for memories that fit what the caller is doing.

Hints never filter. ``active_path`` names a language through its extension and, as the spec
says, then favours ``Style`` memories for that language; ``priority_ids`` add a fixed bonus.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from pipeline.config import ContextBonuses
from pipeline.query.keywords import extract_keywords
from pipeline.query.request import ContextHints

LANGUAGE_BY_EXTENSION = {
    ".py": "python", ".pyi": "python", ".ts": "typescript", ".tsx": "typescript", ".js": "javascript",
    ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".go": "go", ".rs": "rust",
    ".java": "java", ".kt": "kotlin", ".kts": "kotlin", ".swift": "swift", ".rb": "ruby", ".php": "php",
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".cs": "csharp",
    ".scala": "scala", ".sh": "bash", ".bash": "bash", ".zsh": "bash", ".sql": "sql", ".r": "r",
    ".lua": "lua", ".dart": "dart", ".ex": "elixir", ".exs": "elixir", ".erl": "erlang", ".hs": "haskell",
    ".clj": "clojure", ".vue": "vue", ".svelte": "svelte", ".tf": "terraform",
}
LANGUAGE_TYPE = "Style"


def language_of(path: str | None) -> str | None:
    if not path:
        return None
    return LANGUAGE_BY_EXTENSION.get(posixpath.splitext(path.replace("\\", "/"))[1].lower())


@dataclass(frozen=True)
class ContextProfile:
    """The hints resolved once per request, then applied to every candidate."""

    language: str | None
    language_source: str | None
    context_terms: frozenset[str]
    tags: frozenset[str]
    types: frozenset[str]
    priority_ids: tuple[str, ...]
    bonuses: ContextBonuses

    @classmethod
    def build(cls, hints: ContextHints, bonuses: ContextBonuses) -> "ContextProfile":
        detected = language_of(hints.active_path)
        language = (hints.language or detected or "").strip().lower() or None
        types = {t.strip() for t in hints.types if t.strip()}
        if detected:
            types.add(LANGUAGE_TYPE)
        return cls(
            language=language,
            language_source="language" if hints.language else ("active_path" if detected else None),
            context_terms=frozenset(extract_keywords(hints.context)),
            tags=frozenset(t.lower() for t in hints.tags),
            types=frozenset(t.lower() for t in types),
            priority_ids=tuple(dict.fromkeys(hints.priority_ids)),
            bonuses=bonuses,
        )

    @property
    def active(self) -> bool:
        return bool(self.language or self.context_terms or self.tags or self.types or self.priority_ids)

    def _language_match(self, memory: dict[str, Any]) -> bool:
        if not self.language:
            return False
        tags = {t.lower() for t in memory.get("tags") or []}
        metadata = memory.get("metadata") or {}
        declared = str(metadata.get("language", "")).lower() if isinstance(metadata, dict) else ""
        return self.language in tags or declared == self.language or self.language in set(
            extract_keywords(memory.get("content"))
        )

    def fits(self, memory: dict[str, Any]) -> bool:
        """Whether the memory matches a type, tag or language hint (an anchor candidate)."""
        return self.bonus(memory, include_priority=False) > 0

    def bonus(self, memory: dict[str, Any], include_priority: bool = True) -> float:
        if not self.active:
            return 0.0
        total = 0.0
        b = self.bonuses
        prefixes = set(memory.get("tag_prefixes") or [t.lower() for t in memory.get("tags") or []])
        if self.tags and self.tags & prefixes:
            total += b.tag
        memory_type = (memory.get("type") or "").lower()
        if self.types and memory_type in self.types:
            total += b.type
        if self._language_match(memory):
            total += b.language
            if memory_type == LANGUAGE_TYPE.lower():
                total += b.language_style
        if self.context_terms and self.context_terms & (prefixes | {memory_type}):
            total += b.context
        if include_priority and memory.get("id") in self.priority_ids:
            total += b.priority
        return total

    def describe(self, fetched_priority: int, anchored: str | None) -> dict[str, Any]:
        return {
            "applied": self.active,
            "language": self.language,
            "language_source": self.language_source,
            "context_terms": sorted(self.context_terms),
            "context_tags": sorted(self.tags),
            "context_types": sorted(self.types),
            "priority_ids": list(self.priority_ids),
            "priority_fetched": fetched_priority,
            "anchor_id": anchored,
        }
