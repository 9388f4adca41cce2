"""Token counts estimated from characters, where no tokenizer is at hand.

Used for what a provider that reports no usage consumed, for the local model's batch budget,
and for the MCP recall tool's response budget.
"""

from __future__ import annotations

import math

CHARS_PER_TOKEN = 4  # the usual estimate for English text


def estimate_tokens(text: str) -> int:
    """About how many tokens ``text`` is (never fewer than its characters ÷ 4, rounded up)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)
