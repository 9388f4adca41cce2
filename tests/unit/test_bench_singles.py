from ops.bench.singles import vector_messages


def test_vector_messages_counts_only_the_vector_stage_across_label_sets():
    text = "\n".join([
        "# HELP dramatiq_messages_total Messages processed.",
        "# TYPE dramatiq_messages_total counter",
        'dramatiq_messages_total{actor_name="index_vectors",queue_name="vectors"} 12.0',
        'dramatiq_messages_total{actor_name="index_vectors",queue_name="vectors.DQ"} 3.0',
        'dramatiq_messages_total{actor_name="link_similar",queue_name="similarity"} 40.0',
        'dramatiq_messages_created{actor_name="index_vectors",queue_name="vectors"} 1.7e+09',
    ])
    assert vector_messages(text) == 15.0
    assert vector_messages("") == 0.0


def test_a_variant_is_a_comma_list_of_settings():
    import pytest

    from ops.bench.singles import parse_variant

    assert parse_variant("") == {}
    assert parse_variant("write_coalesce_window_ms=5, WRITE_COALESCE_MAX_WAIT_MS=30") == {
        "WRITE_COALESCE_WINDOW_MS": "5", "WRITE_COALESCE_MAX_WAIT_MS": "30"}
    with pytest.raises(ValueError):
        parse_variant("WRITE_COALESCE_WINDOW_MS")
