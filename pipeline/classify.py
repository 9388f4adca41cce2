"""Pattern classifier: a memory's type from cue phrases in its content.

Cheap and deterministic, so it always runs when a client gave no type; an LLM classifier
(when configured) refines it on the enrichment queue and falls back to this one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Ordered: the first type whose cues match wins. Confidence grows with the number of cues.
_CUES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Decision", (r"\bdecid(?:e|ed|ing)\b", r"\bchose\b", r"\bchoos(?:e|ing)\b", r"\bgoing with\b",
                  r"\bopted\b", r"\bwe will use\b", r"\bsettled on\b", r"\bpicked\b", r"\bswitch(?:ed)? to\b")),
    ("Preference", (r"\bprefers?\b", r"\bpreferred\b", r"\bfavou?rite\b", r"\b(?:i|we|they|he|she) (?:really )?(?:like|love|hate|dislike)s?\b",
                    r"\brather than\b", r"\binstead of\b")),
    ("Habit", (r"\bevery (?:day|morning|evening|night|week|weekend|month)\b", r"\bdaily\b", r"\bweekly\b",
               r"\broutine\b", r"\bhabit\b", r"\busually\b")),
    ("Style", (r"\bstyle\b", r"\bformat(?:ting)?\b", r"\bindent(?:ation)?\b", r"\bnaming\b", r"\bconvention\b",
               r"\btabs\b", r"\bsnake_case\b", r"\bcamelcase\b")),
    ("Insight", (r"\brealis(?:e|ed)\b", r"\brealiz(?:e|ed)\b", r"\blearn(?:ed|t)\b", r"\bturns out\b",
                 r"\binsight\b", r"\bdiscovered\b", r"\blesson\b", r"\broot cause\b")),
    ("Pattern", (r"\balways\b", r"\btypically\b", r"\bpattern\b", r"\btends? to\b", r"\boften\b",
                 r"\bwhenever\b", r"\brecurring\b")),
)
_COMPILED = tuple((kind, tuple(re.compile(p, re.IGNORECASE) for p in patterns)) for kind, patterns in _CUES)
# One pass over the text answers "any cue at all?"; most memories (chat above all) have none,
# and at thousands of memories a second one search per pattern is most of the persist stage's cost.
_ANY_CUE = re.compile("|".join(f"(?:{p})" for _, patterns in _CUES for p in patterns), re.IGNORECASE)
# The cues are lower-case ASCII: on lower-cased ASCII text a case-sensitive search finds the
# same and takes a fifth of the time (IGNORECASE folds every character it compares). Text
# with other characters keeps IGNORECASE, whose Unicode folding lower() does not reproduce.
_ANY_CUE_LOWER = re.compile(_ANY_CUE.pattern)

FALLBACK_TYPE = "Context"
FALLBACK_CONFIDENCE = 0.5


@dataclass(frozen=True)
class Classification:
    type: str
    confidence: float


def classify(content: str) -> Classification:
    has_cue = _ANY_CUE_LOWER.search(content.lower()) if content.isascii() else _ANY_CUE.search(content)
    if not has_cue:
        return Classification(FALLBACK_TYPE, FALLBACK_CONFIDENCE)
    for kind, patterns in _COMPILED:
        hits = sum(1 for pattern in patterns if pattern.search(content))
        if hits:
            return Classification(kind, round(min(0.9, 0.6 + 0.1 * hits), 2))
    return Classification(FALLBACK_TYPE, FALLBACK_CONFIDENCE)
