"""The suite reads ops.bench.quality's two-corpus JSON (and the older one-corpus JSON)."""

from __future__ import annotations

from ops.bench.suite import figures, render

ROW = {"questions": 2, "recall@1": 0.5, "recall@5": 0.75, "recall@10": 1.0, "hit@5": 1.0, "mrr": 0.75}


def test_two_corpora_render_a_table_each_with_after_write_and_cost():
    data = {"settings": {}, "corpora": [{
        "corpus": "realtalk-dev", "conversations": ["rt1"], "memories": 10, "embedded": {"texts_per_memory": 1.5},
        "cpu_ms_per_memory": {"workers": 20.0, "web": 3.0},
        "after_write": {"summary": {"overall": {**ROW, "recall@10": 0.9}}},
        "idle": {"questions": 2, "recall_p50_ms": 21.0, "recall_p95_ms": 35.0,
                 "summary": {"temporal": ROW, "overall": ROW}},
    }]}
    text = "\n".join(render.quality(figures.quality(data), {}))
    assert "**realtalk-dev** (1 conversations, 10 turns, 2 questions)" in text
    assert "| **overall** | 2 | 0.500 | 0.750 | 1.000 | 1.000 | 0.750 |" in text
    assert "recall@10 0.900" in text and "1.50 embedded texts" in text and "p50 21.0 ms" in text


def test_the_older_one_corpus_json_still_renders():
    data = {"memories": 10, "questions": 2, "provider": "local", "conversations": ["a"], "summary": {"overall": ROW}}
    assert "| **overall** | 2 | 0.500 | 0.750 | 1.000 | 1.000 | 0.750 |" in render.quality(figures.quality(data), {})
