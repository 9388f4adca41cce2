"""pipeline.bert: the local model's forward pass in plain torch gives transformers' BertModel's
hidden states, and a checkpoint it cannot run is refused with a clear message."""

from __future__ import annotations

import json

import pytest
import torch

from pipeline.bert import BertConfig, load_bert
from pipeline.errors import ConfigurationError

SMALL = {"model_type": "bert", "vocab_size": 120, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
         "intermediate_size": 64, "max_position_embeddings": 40, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
         "hidden_act": "gelu", "position_embedding_type": "absolute"}


def saved_reference(tmp_path):
    """A small BertModel with random weights, saved as transformers saves one (config + safetensors).
    Weights drawn wider than a trained model's (initializer_range 0.5), so that activations reach
    where an approximation (tanh GELU, say) would differ measurably."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(7)
    reference = transformers.BertModel(transformers.BertConfig(**SMALL, initializer_range=0.5)).eval()
    reference.save_pretrained(tmp_path, safe_serialization=True)
    return reference


def packed_inputs():
    """Two rows; the first packs two texts (each attends to itself, positions from 0), the second
    one text and padding (a block of its own), as pipeline.packed_model builds them."""
    owner = torch.tensor([[0, 0, 0, 1, 1, 1, 1], [2, 2, 2, 2, -1, -1, -1]])
    positions = torch.tensor([[0, 1, 2, 0, 1, 2, 3], [0, 1, 2, 3, 0, 0, 0]])
    input_ids = torch.randint(1, SMALL["vocab_size"], owner.shape, generator=torch.Generator().manual_seed(3))
    mask = (owner[:, :, None] == owner[:, None, :])[:, None]
    return input_ids, mask, positions, owner


def test_hidden_states_match_transformers_bert_on_packed_rows(tmp_path):
    reference = saved_reference(tmp_path)
    ours = load_bert(tmp_path)
    input_ids, mask, positions, owner = packed_inputs()
    types = torch.zeros_like(input_ids)
    with torch.inference_mode():
        expected = reference(input_ids=input_ids, attention_mask=mask, position_ids=positions,
                             token_type_ids=types).last_hidden_state
        got = ours(input_ids=input_ids, attention_mask=mask, position_ids=positions, token_type_ids=types)
    real = owner >= 0
    assert got.shape == expected.shape == (2, 7, SMALL["hidden_size"])
    assert torch.allclose(got[real], expected[real], atol=1e-5)
    # a packed text's states are those it has alone
    with torch.inference_mode():
        alone = ours(input_ids=input_ids[:1, 3:], attention_mask=None, position_ids=positions[:1, 3:],
                     token_type_ids=types[:1, 3:])
    assert torch.allclose(got[0, 3:], alone[0], atol=1e-5)


def test_a_checkpoint_missing_weights_is_refused(tmp_path):
    saved_reference(tmp_path)
    from safetensors.torch import load_file, save_file

    weights = load_file(tmp_path / "model.safetensors")
    del weights["encoder.layer.1.output.dense.weight"]
    save_file(weights, tmp_path / "model.safetensors")
    with pytest.raises(ConfigurationError, match="missing.*encoder.layer.1.output.dense.weight"):
        load_bert(tmp_path)


@pytest.mark.parametrize("change, message", [
    ({"model_type": "roberta"}, "runs BERT models"),
    ({"hidden_act": "relu"}, "uses GELU"),
    ({"position_embedding_type": "relative_key"}, "absolute position embeddings"),
    ({"is_decoder": True}, "not decoders"),
    ({"num_attention_heads": 5}, "multiple of num_attention_heads"),
])
def test_a_model_the_encoder_cannot_run_is_refused(change, message):
    with pytest.raises(ConfigurationError, match=message):
        BertConfig.from_json({**SMALL, **change}, "model")


def test_a_folder_without_its_config_says_what_is_missing(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({k: v for k, v in SMALL.items() if k != "hidden_size"}))
    with pytest.raises(ConfigurationError, match="BERT cannot be read.*hidden_size"):
        load_bert(tmp_path)
