"""The local model's batches: longest first, bounded by padded tokens and by count."""

from __future__ import annotations

from pipeline.embedding import token_budget_batches
from pipeline.packed_model import balanced_parts


def padded_tokens(batch: list[int], texts: list[str]) -> int:
    return len(batch) * max(len(texts[i]) // 4 + 2 for i in batch)


def test_every_text_is_in_exactly_one_batch_longest_first():
    texts = ["x" * n for n in (40, 400, 4, 120, 40, 800, 12)]
    batches = token_budget_batches(texts, token_budget=256, max_texts=64, max_tokens=256)
    flat = [i for batch in batches for i in batch]
    assert sorted(flat) == list(range(len(texts)))
    lengths = [len(texts[i]) for i in flat]
    assert lengths == sorted(lengths, reverse=True)


def test_a_batch_stays_within_the_budget_unless_one_text_is_over_it_alone():
    texts = ["word " * n for n in range(1, 200, 7)]
    batches = token_budget_batches(texts, token_budget=300, max_texts=64, max_tokens=256)
    for batch in batches:
        assert len(batch) == 1 or padded_tokens(batch, texts) <= 300
    assert len(batches) > 1
    assert any(len(batch) > 1 for batch in batches)  # short texts do share a batch


def test_the_longest_text_counts_at_most_the_models_window():
    texts = ["y" * 10_000, "z" * 9_000]  # both truncated to 256 tokens by the model
    assert token_budget_batches(texts, token_budget=512, max_texts=64, max_tokens=256) == [[0, 1]]


def test_the_count_bound_holds_for_tiny_texts():
    texts = ["hi"] * 10
    batches = token_budget_batches(texts, token_budget=10_000, max_texts=4, max_tokens=256)
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
