"""The local model's folder is read before any library loads it: another pipeline is refused clearly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.errors import ConfigurationError
from pipeline.sentence_model import load_sentence_model

MEAN = {"word_embedding_dimension": 384, "pooling_mode_mean_tokens": True, "pooling_mode_cls_token": False}


def model_folder(tmp_path: Path, kinds=("Transformer", "Pooling", "Normalize"), pooling=MEAN,
                 options=None) -> Path:
    modules = [{"idx": i, "name": str(i), "path": "" if i == 0 else f"{i}_{kind}",
                "type": f"sentence_transformers.models.{kind}"} for i, kind in enumerate(kinds)]
    (tmp_path / "modules.json").write_text(json.dumps(modules))
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    (tmp_path / "sentence_bert_config.json").write_text(json.dumps(options or {"max_seq_length": 256}))
    return tmp_path


def test_a_pipeline_without_normalisation_is_refused(tmp_path):
    with pytest.raises(ConfigurationError, match="Transformer → Pooling → Normalize"):
        load_sentence_model(model_folder(tmp_path, kinds=("Transformer", "Pooling")))


def test_a_pooling_other_than_the_mean_is_refused(tmp_path):
    with pytest.raises(ConfigurationError, match="mean only"):
        load_sentence_model(model_folder(tmp_path, pooling={**MEAN, "pooling_mode_cls_token": True}))


def test_a_lower_casing_model_is_refused(tmp_path):
    with pytest.raises(ConfigurationError, match="lower-cases"):
        load_sentence_model(model_folder(tmp_path, options={"max_seq_length": 256, "do_lower_case": True}))


def test_a_folder_without_its_description_says_which_file(tmp_path):
    with pytest.raises(ConfigurationError, match="modules.json cannot be read"):
        load_sentence_model(tmp_path)
