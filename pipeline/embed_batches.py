"""How embed work is grouped into messages: texts of similar length together.

A transformer pads every text of a batch to the batch's longest. Real conversation text is
long-tailed (a Slack workspace: mostly a line, sometimes a page), so a batch of 64 messages
in the order they were written nearly always holds one text at the model's 256-token limit,
and the model computes 64 x 256 tokens for a batch whose texts average a few dozen.
The local model sorts the texts of one call by length, but one call is one message: what
shares a call is decided here, when the stage before cuts its work into messages. Sorting a
persist batch by length before cutting it makes each message a run of similar lengths,
so most messages are short and pad little; the message size, and so how long the longest
message holds a worker, stays what it was (``pipeline.stages.message_chunks``).

A memory written twice in one batch (two queued writes of the same id drained together) is
embedded once, as its last version: the graph holds the last version after the batch's
upsert, and reordering by length must not let an older text reach the index last.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence, TypeVar

# Any mapping with an "id" and a "text" (``pipeline.stages.EmbedItem``; this module is below it).
Item = TypeVar("Item", bound=Mapping[str, Any])


def latest_per_memory(items: Sequence[Item]) -> list[Item]:
    """The last item of each memory (and target collections), in the order of those last items."""
    latest: dict[tuple[str, tuple[str, ...] | None], int] = {}
    for position, item in enumerate(items):
        collections = item.get("collections")
        latest[(item["id"], tuple(collections) if collections is not None else None)] = position
    return [items[position] for position in sorted(latest.values())]


def by_text_length(items: Sequence[Item]) -> list[Item]:
    """``items`` ordered by the length of their text, shortest first (ties keep their order)."""
    return sorted(items, key=lambda item: len(item.get("text") or ""))


def embed_order(items: Sequence[Item]) -> list[Item]:
    """The order embed messages are cut from: one item per memory, similar lengths adjacent."""
    return by_text_length(latest_per_memory(items))
