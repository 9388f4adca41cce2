"""Extractive summaries: the sentences that carry the most of a memory's vocabulary.

Used when no summary model is configured, and as the fallback when the LLM fails. A
frequency-scored pick of whole sentences, kept in their original order: deterministic,
cheap, and never says anything the memory did not.
"""

from __future__ import annotations

import re
from collections import Counter

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\n{2,}|\n(?=[-*•]\s)")
_WORD = re.compile(r"[a-z0-9][a-z0-9'’-]*")
_STOPWORDS = frozenset(
    "a an and are as at be been but by can could did do does for from had has have he her him his i if in "
    "into is it its just me my no not of on or our she so than that the their them then there these they "
    "this to too us was we were what when where which who will with would you your also about after all "
    "any because before being both each few more most other over same some such only own very s t don".split()
)


_RELATIVE_FLOOR = 0.6


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s and s.strip()]


def _clip(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    cut = text[: max_chars - 1].rsplit(" ", 1)[0].rstrip(" ,;:-")
    return cut + "…"


def extractive_summary(text: str, max_chars: int) -> str:
    """At most ``max_chars``: the best-scoring sentences, in document order."""
    sentences = split_sentences(text)
    if not sentences:
        return ""
    if len(sentences) == 1:
        return _clip(sentences[0], max_chars)
    words = [[w for w in _WORD.findall(s.lower()) if w not in _STOPWORDS] for s in sentences]
    frequency = Counter(w for sentence in words for w in sentence)
    top = max(frequency.values(), default=1)

    def score(index: int) -> float:
        terms = words[index]
        if not terms:
            return 0.0
        # Mean normalised frequency, so long sentences do not win by length alone; the
        # opening sentence gets a nudge, as it usually states the point.
        return sum(frequency[w] / top for w in terms) / len(terms) ** 0.5 + (0.3 if index == 0 else 0.0)

    scores = [score(i) for i in range(len(sentences))]
    ranked = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))
    # Filler is not summary: a sentence well below the best one is left out even if it fits.
    floor = _RELATIVE_FLOOR * scores[ranked[0]]
    chosen: list[int] = []
    used = 0
    for index in ranked:
        length = len(sentences[index]) + (1 if chosen else 0)
        if scores[index] >= floor and used + length <= max_chars:
            chosen.append(index)
            used += length
    if not chosen:
        return _clip(sentences[ranked[0]], max_chars)
    return " ".join(sentences[i] for i in sorted(chosen))


_SUMMARY_SYSTEM = (
    "Summarise the memory below in at most {limit} characters, in the memory's own language, "
    "keeping names, numbers and decisions. Answer with one JSON object and nothing else: "
    "{{\"summary\": S}}."
)


class Summarizer:
    """LLM summaries when a model is configured, extractive ones otherwise or on failure."""

    def __init__(self, max_chars: int, llm=None, model: str | None = None):
        self._max_chars = max_chars
        self._llm = llm if model else None
        self._model = model

    def summarize(self, text: str) -> tuple[str, str]:
        """(summary, source) where source is "llm" or "extractive"."""
        if self._llm is not None:
            from pipeline.enrichment.llm import LLMFailure

            try:
                reply = self._llm.ask(self._model, _SUMMARY_SYSTEM.format(limit=self._max_chars), text, max_tokens=200)
                summary = reply.get("summary")
                if isinstance(summary, str) and summary.strip():
                    return _clip(summary.strip(), self._max_chars), "llm"
            except LLMFailure:
                pass
        return extractive_summary(text, self._max_chars), "extractive"
