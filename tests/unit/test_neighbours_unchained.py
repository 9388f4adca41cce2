"""Turns a batch wrote next to each other pair up before enrichment chains them."""

from __future__ import annotations

from pipeline.query.neighbours import batch_pairs

PREFIXES = ("conversation", "channel")


def test_batch_neighbours_in_one_scope_pair_up():
    rows = [("a", 100, 5.0, ["conversation:x", "conversation:x:session:1"]),
            ("b", 101, 5.0, ["conversation:x", "conversation:x:session:1"]),
            ("c", 102, 5.0, ["conversation:x"]),
            ("d", 104, 5.0, ["conversation:x"])]
    near, far = batch_pairs(rows, PREFIXES)
    assert near == [("b", "a"), ("c", "b")]
    assert far == [("c", "a"), ("d", "c")]
    assert batch_pairs(rows, PREFIXES, steps=1) == ([("b", "a"), ("c", "b")], [])


def test_no_pair_across_scopes_backwards_in_time_without_arrival_or_scope():
    rows = [("a", 100, 5.0, ["conversation:x"]),
            ("b", 101, 5.0, ["conversation:y"]),   # another scope
            ("c", 200, 9.0, ["channel:z"]),
            ("d", 201, 8.0, ["channel:z"]),        # written later, timestamped earlier: not its successor
            ("e", None, 5.0, ["conversation:x"]),  # written before arrivals existed
            ("f", 301, 5.0, ["project:p"]), ("g", 302, 5.0, ["project:p"])]  # not a scope tag
    assert batch_pairs(rows, PREFIXES) == ([], [])
