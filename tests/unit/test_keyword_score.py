"""keyword_score looks up the words that stem like each keyword; it must equal the plain definition."""

from __future__ import annotations

import random
import re

from pipeline.query.keywords import extract_keywords, stem
from pipeline.query.scoring import keyword_score


def reference(keywords: list[str], content: str) -> float:
    """The definition: a keyword counts when it, or its stem, is the stem of a content word."""
    if not keywords:
        return 0.0
    stems = {stem(w) for w in re.findall(r"[a-z0-9]+", content.lower())}
    return sum(1 for k in keywords if k in stems or stem(k) in stems or (" " in k and k in content.lower())) / len(keywords)


def test_matches_the_definition_on_words_built_to_stem_alike():
    # Roots and suffixes chosen so that stems collide in every way stem() allows
    # (address/addressing/addresses, city/cities, study/studies/studying, short words kept).
    roots = ["address", "class", "run", "data", "bas", "city", "cit", "walk", "stud", "study", "go", "adres", "test"]
    suffixes = ["", "s", "es", "ies", "ing", "ed", "y", "ings", "eds", "sing", "esed"]
    vocabulary = [r + s for r in roots for s in suffixes] + ["Studies", "CITIES", "addressing", "classes"]
    rng = random.Random(11)
    for _ in range(20_000):
        content = " ".join(rng.choices(vocabulary, k=rng.randint(1, 8)))
        keywords = extract_keywords(" ".join(rng.choices(vocabulary, k=rng.randint(1, 4))))
        assert keyword_score(keywords, content) == reference(keywords, content), (keywords, content)


def test_examples():
    assert keyword_score(["walks"], "I walk daily") == 1.0
    assert keyword_score(["address"], "we are addressing it") == 1.0  # addressing stems to the keyword itself
    assert keyword_score(["walking", "rain"], "a walk") == 0.5
    assert keyword_score([], "anything") == 0.0
