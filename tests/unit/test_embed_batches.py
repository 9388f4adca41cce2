"""Embed messages group texts of similar length, one item per memory, at the same size."""

from __future__ import annotations

import random

import pipeline.stages as stages
from pipeline.embed_batches import by_text_length, embed_order, latest_per_memory


def _item(memory_id: str, text: str, **extra) -> dict:
    return {"id": memory_id, "op": "store", "text": text, **extra}


def _padded(messages: list[list[dict]]) -> int:
    """What a model that pads each message to its longest text computes, in characters."""
    return sum(len(message) * max(len(item["text"]) for item in message) for message in messages)


def test_items_are_ordered_shortest_first_and_ties_keep_their_order():
    items = [_item("a", "xxx"), _item("b", "x"), _item("c", "yyy"), _item("d", "xx")]
    assert [item["id"] for item in by_text_length(items)] == ["b", "d", "a", "c"]


def test_a_memory_written_twice_in_one_batch_is_embedded_once_as_its_last_version():
    items = [_item("m", "the first, longer version of it"), _item("n", "other"), _item("m", "edited")]
    kept = embed_order(items)
    assert [(item["id"], item["text"]) for item in kept] == [("n", "other"), ("m", "edited")]


def test_copies_for_different_collections_are_all_kept():
    items = [_item("m", "text", collections=["live"]), _item("m", "text", collections=["target"])]
    assert latest_per_memory(items) == items


def test_send_embed_cuts_length_sorted_messages_of_the_same_size(monkeypatch):
    rng = random.Random(7)
    # long-tailed lengths, as in a real workspace: mostly a line, sometimes a page
    items = [_item(str(n), "w" * (rng.choice([20, 40, 80, 150]) if rng.random() < 0.9 else 1500)) for n in range(500)]
    sent: list[list[dict]] = []
    monkeypatch.setattr(stages, "send", lambda actor, chunk: sent.append(chunk))

    stages.send_embed(list(items), 64, by_length=True)

    assert [len(message) for message in sent] == [64] * 7 + [52]
    assert sorted(item["id"] for message in sent for item in message) == sorted(item["id"] for item in items)
    lengths = [len(item["text"]) for message in sent for item in message]
    assert lengths == sorted(lengths)
    in_arrival_order = stages.message_chunks(items, 64)
    assert _padded(sent) < _padded(in_arrival_order) / 3


def test_without_grouping_messages_keep_the_order_the_writes_arrived_in(monkeypatch):
    items = [_item(str(n), "w" * (100 - n)) for n in range(100)]
    sent: list[list[dict]] = []
    monkeypatch.setattr(stages, "send", lambda actor, chunk: sent.append(chunk))

    stages.send_embed(list(items), 64, by_length=False)

    assert sent == [items[:64], items[64:]]
