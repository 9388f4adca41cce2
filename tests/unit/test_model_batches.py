"""The local model's batches: longest first, bounded by padded tokens and by count; rows; passes."""

from __future__ import annotations

from pipeline.packed_model import balanced_parts, budget_batches


def test_every_item_is_in_exactly_one_batch_longest_first():
    lengths = [12, 102, 3, 32, 12, 202, 5]
    batches = budget_batches(lengths, token_budget=256, max_items=64)
    flat = [i for batch in batches for i in batch]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths, reverse=True)


def test_a_batch_stays_within_the_budget_unless_one_item_is_over_it_alone():
    lengths = list(range(3, 400, 9))
    batches = budget_batches(lengths, token_budget=300, max_items=64)
    for batch in batches:
        assert len(batch) == 1 or len(batch) * max(lengths[i] for i in batch) <= 300
    assert any(len(batch) == 1 and lengths[batch[0]] > 300 for batch in batches)
    assert any(len(batch) > 1 for batch in batches)  # short items do share a batch


def test_the_count_bound_holds_for_tiny_items():
    batches = budget_batches([3] * 10, token_budget=10_000, max_items=4)
    assert [len(batch) for batch in batches] == [4, 4, 2]


def test_rows_hold_every_text_once_within_the_row_size():
    from pipeline.packed_model import pack_rows

    lengths = [30, 8, 120, 300, 12, 12, 60, 2, 90]
    rows = pack_rows(lengths, row_tokens=128)
    assert sorted(i for row in rows for i in row) == list(range(len(lengths)))
    for row in rows:
        total = sum(lengths[i] for i in row)
        assert total <= 128 or row == [3]  # 300 tokens: a row of its own
    assert len(rows) < len(lengths)  # short texts share rows
    assert [i for i in rows[0]] == [3]  # longest first


def test_rows_are_filled_first_fit():
    from pipeline.packed_model import pack_rows

    # 100 opens row 0, 90 opens row 1, 20 fits row 0 (28 left), 30 only row 1 (38 left)
    assert pack_rows([20, 100, 30, 90], row_tokens=128) == [[1, 0], [3, 2]]


def test_a_call_splits_into_parts_of_about_equal_length_each_text_once():
    lengths = [120, 18, 18, 40, 7, 90, 33, 18, 60, 5]
    parts = balanced_parts(lengths, 2)
    assert sorted(i for part in parts for i in part) == list(range(len(lengths)))
    totals = [sum(lengths[i] for i in part) for part in parts]
    assert len(parts) == 2 and max(totals) - min(totals) <= max(lengths)
    assert balanced_parts([30, 10], 4) == [[0], [1]]  # never an empty part
    assert balanced_parts([30, 10, 5], 1) == [[0, 1, 2]]
    assert balanced_parts([], 2) == []
