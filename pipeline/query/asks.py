"""Memories that only ask: a small penalty for candidates whose sentences are questions.

In a conversation, a turn that asks ("Do anything interesting today?", "What about Kate?",
"What hobbies do you have?") shares the words and the topic of a question put to recall and so
embeds close to it, but it states nothing a question can be answered from; the answer is the
turn that replies. Such turns crowd the top of real chats' pools (docs/recall.md). Each
candidate gets ``score_components.asks``, the share of its text that sits in sentences ending
with a question mark (a speaker's label, ``"Kate: "``, is not part of it), and loses
``SEARCH_WEIGHT_ASKS`` × it: a turn that only asks loses the whole weight, one that tells at
length and then asks back loses a little. Small enough to re-order near-ties, not to bury a
question that is the only match.

A regular expression over each candidate's content, cached (memories recur across queries).
"""

from __future__ import annotations

import re
from functools import lru_cache

from pipeline.labelled import sentences, split_label

# a sentence asks when it ends with "?", however many "?!" or closing quotes and brackets follow
_ASKS = re.compile(r"\?[?!.\"'”’)\]]*\s*$")


@lru_cache(maxsize=4096)  # a pool recurs across queries; long Slack messages keep the cache small
def question_share(content: str | None) -> float:
    """The share (0–1) of ``content``'s text, in characters, that sits in sentences ending with a question mark.

    Counted in characters, not sentences: "Yes, I've celebrated New Years in the Caribbean, Los
    Angeles, New York and Boston. What about you? Any plans?" tells far more than it asks.
    """
    if not content:
        return 0.0
    pieces = [piece.strip() for piece in sentences(split_label(content)[1])]
    total = sum(len(piece) for piece in pieces)
    if not total:
        return 0.0
    return sum(len(piece) for piece in pieces if _ASKS.search(piece)) / total
