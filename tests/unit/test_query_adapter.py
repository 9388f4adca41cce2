"""The query adapter: which settings load which map, and what it does to a query's vector."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.config import Settings
from pipeline.errors import ConfigurationError
from pipeline.query.adapter import QueryAdapter, adapter_for, load_adapter, save_adapter
from pipeline.query.candidates import CandidateSources, VectorStatus


class _Embedder:
    dimensions = 2

    def __init__(self, fail: bool = False):
        self.fail, self.calls = fail, []

    def embed(self, texts):
        self.calls.append(list(texts))
        if self.fail:
            raise ConnectionError("provider down")
        return [[1.0, 0.0] for _ in texts]


def _sources(embedder, adapter=None):
    return CandidateSources(graph=lambda: None, vectors=lambda: None, embedder=lambda: embedder,
                            dimensions=lambda: 2, adapt_query=adapter.apply if adapter else None)


def test_no_map_by_default_and_a_named_one_must_fit_the_providers_vectors(tmp_path):
    assert Settings().recall_query_adapter == "off" and adapter_for(Settings()) is None
    fitted = tmp_path / "minilm.npz"
    save_adapter(fitted, "all-MiniLM-L6-v2", np.eye(384))
    assert adapter_for(Settings(embedding_provider="local", recall_query_adapter=str(fitted))).model == "all-MiniLM-L6-v2"
    with pytest.raises(ConfigurationError, match="maps 384-dimensional vectors .* produces 64"):
        adapter_for(Settings(embedding_provider="hash", vector_size=64, recall_query_adapter=str(fitted)))
    with pytest.raises(ConfigurationError, match="cannot read"):
        adapter_for(Settings(recall_query_adapter=str(tmp_path / "missing.npz")))


def test_a_map_file_round_trips_and_a_bad_one_is_a_clear_configuration_error(tmp_path):
    path = tmp_path / "rotate.npz"
    save_adapter(path, "some-model", np.array([[0.0, -1.0], [1.0, 0.0]]))
    loaded = load_adapter(path)
    assert loaded.model == "some-model" and loaded.apply([1.0, 0.0]) == pytest.approx([0.0, 1.0])
    (tmp_path / "bad.npz").write_bytes(b"not a map")
    with pytest.raises(ConfigurationError, match="RECALL_QUERY_ADAPTER"):
        load_adapter(tmp_path / "bad.npz")
    save_adapter(tmp_path / "wide.npz", "m", np.zeros((2, 3)))
    with pytest.raises(ConfigurationError, match="not a square"):
        load_adapter(tmp_path / "wide.npz")


def test_the_adapted_vector_is_a_unit_vector_and_a_vector_of_another_size_is_left_alone():
    adapter = QueryAdapter("m", np.array([[2.0, 0.0], [0.0, 1.0]], dtype=np.float32))
    adapted = adapter.apply([0.6, 0.8])
    assert np.linalg.norm(adapted) == pytest.approx(1.0)
    assert adapted == pytest.approx(np.array([1.2, 0.8]) / np.linalg.norm([1.2, 0.8]))
    assert adapter.apply([1.0, 0.0, 0.0]) == [1.0, 0.0, 0.0]


def test_recall_maps_a_text_querys_vector_but_not_the_placeholder():
    swap = QueryAdapter("m", np.array([[0.0, 1.0], [1.0, 0.0]], dtype=np.float32))
    assert _sources(_Embedder(), swap).query_vector("what did I say?", VectorStatus()) == pytest.approx([0.0, 1.0])
    # with the second form of a query that names someone: one call, the sum mapped
    embedder = _Embedder()
    named = _sources(embedder, swap).query_vector("What did Kate say?", VectorStatus(), 1.0, "pronouns")
    assert len(embedder.calls) == 1 and len(embedder.calls[0]) == 2 and named == pytest.approx([0.0, 1.0])
    assert _sources(_Embedder()).query_vector("what did I say?", VectorStatus()) == [1.0, 0.0]  # no map
    status = VectorStatus()
    placeholder = _sources(_Embedder(fail=True), swap).query_vector("what did I say?", status)
    unmapped = _sources(_Embedder(fail=True)).query_vector("what did I say?", VectorStatus())
    assert status.embedding_fallback and placeholder == unmapped  # the provider's failure, not the map's


def test_the_setting_reaches_recalls_query_vector(tmp_path):
    from pipeline.query.engine import RecallEngine

    path = tmp_path / "swap.npz"
    save_adapter(path, "m", np.array([[0.0, 1.0], [1.0, 0.0]]))
    settings = Settings(embedding_provider="hash", vector_size=2, recall_query_adapter=str(path))
    engine = RecallEngine(settings, lambda: None, lambda: None, lambda: _Embedder())
    assert engine._sources.query_vector("what did I say?", VectorStatus()) == pytest.approx([0.0, 1.0])
    plain = RecallEngine(Settings(embedding_provider="hash", vector_size=2), lambda: None, lambda: None, lambda: _Embedder())
    assert plain._sources.query_vector("what did I say?", VectorStatus()) == [1.0, 0.0]
