"""A BERT encoder in plain torch: the forward pass of the local model, without transformers.

transformers' ``BertModel`` computes the same hidden states (``tests/unit/test_bert.py``
compares them), but importing transformers costs seconds of CPU in every process that loads
the model (the web and the workers that embed), all of them at each start on the same cores,
and a restart waits for the web's (docs/benchmarks-log.md, issue 21). An encoder-only BERT in
eval mode is a few layers of torch: embeddings, then per layer self-attention and a
feed-forward block, each followed by a residual and LayerNorm. Its weights load from the
model's ``model.safetensors`` under the names transformers gives them.

Only what the local provider runs is supported: absolute positions, GELU, no cross-attention;
``BertConfig.from_json`` refuses anything else with a ``ConfigurationError``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file
from torch import nn
from torch.nn import functional

from pipeline.errors import ConfigurationError

# Weights of the checkpoint this encoder does not use: the pooler (sentence models pool by
# the tokens' mean) and the position-id buffer (positions are passed in).
UNUSED_WEIGHT_PREFIXES = ("pooler.", "embeddings.position_ids")


@dataclass(frozen=True)
class BertConfig:
    vocab_size: int
    hidden_size: int
    layers: int
    heads: int
    intermediate_size: int
    max_positions: int
    type_vocab_size: int
    layer_norm_eps: float

    @classmethod
    def from_json(cls, config: dict[str, Any], source: str) -> BertConfig:
        """The encoder's shape from a model's ``config.json``; a ``ConfigurationError`` for a model it cannot run."""
        if config.get("model_type") != "bert":
            raise ConfigurationError(f"{source}: the local provider runs BERT models, this one is {config.get('model_type')!r}")
        if config.get("hidden_act", "gelu") != "gelu":
            raise ConfigurationError(f"{source}: the local provider's BERT uses GELU, this model uses {config['hidden_act']!r}")
        # Packed rows count each text's positions from 0 (pipeline.packed_model): absolute positions only.
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise ConfigurationError(f"{source}: the local provider needs absolute position embeddings")
        if config.get("is_decoder") or config.get("add_cross_attention"):
            raise ConfigurationError(f"{source}: the local provider runs BERT encoders, not decoders")
        if config["hidden_size"] % config["num_attention_heads"]:
            raise ConfigurationError(f"{source}: hidden_size is not a multiple of num_attention_heads")
        return cls(vocab_size=config["vocab_size"], hidden_size=config["hidden_size"], layers=config["num_hidden_layers"],
                   heads=config["num_attention_heads"], intermediate_size=config["intermediate_size"],
                   max_positions=config["max_position_embeddings"], type_vocab_size=config.get("type_vocab_size", 2),
                   layer_norm_eps=config.get("layer_norm_eps", 1e-12))


class _Embeddings(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_positions, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, input_ids: torch.Tensor, position_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        summed = self.word_embeddings(input_ids) + self.position_embeddings(position_ids) + self.token_type_embeddings(token_type_ids)
        return self.LayerNorm(summed)


class _SelfAttention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.heads = config.heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        batch, length, width = hidden.shape

        def split(projected: torch.Tensor) -> torch.Tensor:  # (batch, heads, length, head width)
            return projected.view(batch, length, self.heads, width // self.heads).transpose(1, 2)

        context = functional.scaled_dot_product_attention(split(self.query(hidden)), split(self.key(hidden)),
                                                          split(self.value(hidden)), attn_mask=mask)
        return context.transpose(1, 2).reshape(batch, length, width)


class _AddNorm(nn.Module):
    """A projection, then the residual and LayerNorm (transformers' BertSelfOutput / BertOutput)."""

    def __init__(self, inputs: int, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(inputs, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, projected: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dense(projected) + residual)


class _Attention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.self = _SelfAttention(config)
        self.output = _AddNorm(config.hidden_size, config)

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        return self.output(self.self(hidden, mask), hidden)


class _Intermediate(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return functional.gelu(self.dense(hidden))


class _Layer(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = _Attention(config)
        self.intermediate = _Intermediate(config)
        self.output = _AddNorm(config.intermediate_size, config)

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        attended = self.attention(hidden, mask)
        return self.output(self.intermediate(attended), attended)


class _Encoder(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.layer = nn.ModuleList(_Layer(config) for _ in range(config.layers))


class BertEncoder(nn.Module):
    """The last hidden states of a BERT, with the module names of transformers' ``BertModel``
    (so its checkpoint's weights load by name)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.embeddings = _Embeddings(config)
        self.encoder = _Encoder(config)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, position_ids: torch.Tensor,
                token_type_ids: torch.Tensor) -> torch.Tensor:
        """Hidden states (batch, length, hidden size). ``attention_mask``: bool, broadcastable to
        (batch, heads, length, length), True where a query position may attend to a key."""
        hidden = self.embeddings(input_ids, position_ids, token_type_ids)
        for layer in self.encoder.layer:
            hidden = layer(hidden, attention_mask)
        return hidden


def load_bert(folder: Path) -> BertEncoder:
    """The BERT in ``folder`` (``config.json``, ``model.safetensors``), in eval mode."""
    try:
        config = BertConfig.from_json(json.loads((folder / "config.json").read_text()), str(folder))
        weights = load_file(folder / "model.safetensors")
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigurationError(f"{folder}: the local model's BERT cannot be read: {exc}") from exc
    # Some checkpoints name their weights under the architecture's prefix.
    weights = {name.removeprefix("bert."): tensor for name, tensor in weights.items()}
    model = BertEncoder(config)
    missing, unexpected = model.load_state_dict(weights, strict=False)
    unexpected = [name for name in unexpected if not name.startswith(UNUSED_WEIGHT_PREFIXES)]
    if missing or unexpected:
        raise ConfigurationError(f"{folder}: the checkpoint does not match a BERT of its config "
                                 f"(missing {missing[:5]}, unexpected {unexpected[:5]})")
    return model.eval()
