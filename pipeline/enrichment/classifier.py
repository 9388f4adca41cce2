"""Memory types: the LLM when configured, the pattern classifier always underneath.

The persist stage already stamps a pattern type on every untyped memory so it is typed the
moment it is recallable; enrichment refines that with the LLM when one is configured. Any
LLM failure (timeout, 429 after retries, HTTP error, malformed or out-of-vocabulary reply)
falls back to the pattern result and is reported, never raised.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.classify import classify as pattern_classify
from pipeline.enrichment.llm import ChatJSON, LLMFailure
from pipeline.records import MEMORY_TYPES

_TYPE_BY_LOWER = {t.lower(): t for t in MEMORY_TYPES}
_SYSTEM = (
    "You classify a memory an AI agent stored about its user or work. Answer with one JSON "
    "object and nothing else: {\"type\": T, \"confidence\": C}, where T is one of "
    + ", ".join(MEMORY_TYPES)
    + " and C is a number from 0 to 1. Decision: a choice made. Pattern: a recurring way things "
    "happen. Preference: what someone likes or prefers. Style: how something is written or "
    "formatted. Habit: something done regularly. Insight: something learned or realised. "
    "Context: background facts that fit none of these."
)
# Memories are capped at 8k characters; the type is decided well before that.
_MAX_PROMPT_CHARS = 4000


@dataclass(frozen=True)
class TypeResult:
    type: str
    confidence: float
    source: str  # "llm" or "pattern"
    llm_attempted: bool = False
    error: str | None = None  # why the LLM was not used, when it was tried


def parse_type_reply(reply: dict) -> tuple[str, float]:
    raw_type = reply.get("type")
    memory_type = _TYPE_BY_LOWER.get(raw_type.strip().lower()) if isinstance(raw_type, str) else None
    if memory_type is None:
        raise LLMFailure(f"malformed reply: type {str(raw_type)[:40]!r} is not a memory type")
    confidence = reply.get("confidence", 0.8)
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
        raise LLMFailure("malformed reply: confidence is not a number from 0 to 1")
    return memory_type, round(float(confidence), 3)


class TypeClassifier:
    def __init__(self, llm: ChatJSON | None = None, model: str | None = None):
        self._llm = llm if model else None
        self._model = model

    @property
    def uses_llm(self) -> bool:
        return self._llm is not None

    def classify(self, content: str) -> TypeResult:
        fallback = pattern_classify(content)
        if self._llm is None:
            return TypeResult(fallback.type, fallback.confidence, "pattern")
        try:
            reply = self._llm.ask(self._model, _SYSTEM, content[:_MAX_PROMPT_CHARS], max_tokens=60)
            memory_type, confidence = parse_type_reply(reply)
        except LLMFailure as exc:
            return TypeResult(fallback.type, fallback.confidence, "pattern", llm_attempted=True, error=exc.reason)
        return TypeResult(memory_type, confidence, "llm", llm_attempted=True)
