"""A Hugging Face ``config.json`` as a ``bert_encoder`` / ``minilm`` config.

The keys BertConfig uses are mapped, the documented HF-only keys ignored, and typos and
values whose computation is not implemented refused with the key named.
"""

from __future__ import annotations

import json
import os

import pytest

import models
from models.bert import HF_IGNORED_KEYS, BertConfig
from models.config import config_to_dict
from models.errors import ArchitectureError

SMALL = {"vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
         "intermediate_size": 48, "max_position_embeddings": 24}

MINILM_CONFIG_JSON = {  # all-MiniLM-L6-v2's config.json, written by transformers 4.8.2
    "_name_or_path": "nreimers/MiniLM-L6-H384-uncased", "architectures": ["BertModel"],
    "attention_probs_dropout_prob": 0.1, "gradient_checkpointing": False, "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1, "hidden_size": 384, "initializer_range": 0.02, "intermediate_size": 1536,
    "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert", "num_attention_heads": 12,
    "num_hidden_layers": 6, "pad_token_id": 0, "position_embedding_type": "absolute",
    "transformers_version": "4.8.2", "type_vocab_size": 2, "use_cache": True, "vocab_size": 30522,
}


def make(config, architecture="bert_encoder"):
    return models.get_architecture(architecture).make_config(config)


@pytest.fixture(scope="module")
def transformers():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return pytest.importorskip("transformers")


def test_hf_bert_config_to_dict_is_accepted_and_builds_a_strict_match(transformers):
    hf_config = transformers.BertConfig(**SMALL, classifier_dropout=0.2, id2label={0: "no", 1: "yes"})
    config = make(hf_config.to_dict() | {"max_seq_length": 24})
    assert config == BertConfig(**SMALL, max_seq_length=24)
    reference = transformers.BertModel(hf_config)
    module = models.get_architecture("bert_encoder").build(config)
    assert sorted(module.state_dict()) == sorted(reference.state_dict())
    shapes = {k: tuple(v.shape) for k, v in module.state_dict().items()}
    assert shapes == {k: tuple(v.shape) for k, v in reference.state_dict().items()}


def test_hf_roberta_config_to_dict_is_accepted_with_roberta_positions(transformers):
    hf_config = transformers.RobertaConfig(**SMALL | {"max_position_embeddings": 34}, type_vocab_size=1)
    config = make(hf_config.to_dict() | {"max_seq_length": 32})
    assert (config.position_ids, config.pad_token_id, config.type_vocab_size) == ("roberta", 1, 1)


def test_transformers_4_config_json_is_accepted():
    config = make(MINILM_CONFIG_JSON | {"torch_dtype": "float32", "classifier_dropout": None,
                                        "id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0},
                                        "num_beams": 1, "temperature": 1.0, "pruned_heads": {}})
    assert config == BertConfig(hidden_size=384, num_hidden_layers=6, intermediate_size=1536)


def test_packaged_minilm_config_json_gives_the_minilm_defaults(minilm_dir):
    packaged = json.loads((minilm_dir / "config.json").read_text())
    assert make(packaged, "minilm") == make({}, "minilm")


def test_hf_config_with_our_keys_keeps_ours():
    config = make(MINILM_CONFIG_JSON | {"pooling": "cls", "normalize": False, "max_seq_length": 128})
    assert (config.pooling, config.normalize, config.max_seq_length) == ("cls", False, 128)


def test_ignored_hf_keys_do_not_reach_the_config():
    config = make(MINILM_CONFIG_JSON)
    assert set(config_to_dict(config)).isdisjoint(HF_IGNORED_KEYS | {"model_type", "position_embedding_type"})
    assert make(config_to_dict(config)) == config


def test_every_ignored_hf_key_is_documented():
    doc = BertConfig.__doc__
    assert [key for key in sorted(HF_IGNORED_KEYS) if f"``{key}``" not in doc] == []


def test_a_typo_in_an_hf_config_is_refused_naming_the_key():
    message = "unknown config key 'hidden_szie' for architecture 'bert_encoder'; accepted keys: add_pooling"
    with pytest.raises(ArchitectureError, match=message):
        make(MINILM_CONFIG_JSON | {"hidden_szie": 384})


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("position_embedding_type", "relative_key",
         "expected 'absolute' (relative position embeddings are not implemented)"),
        ("is_decoder", True, "expected false (a decoder's causal self-attention is not implemented)"),
        ("add_cross_attention", True, "expected false (cross-attention layers are not implemented)"),
        ("pruned_heads", {"0": [1]}, "expected {} (pruned attention heads are not implemented)"),
        ("model_type", "distilbert",
         "expected one of 'bert', 'roberta', 'xlm-roberta', 'camembert' (BertModel's module tree)"),
    ],
)
def test_hf_values_we_do_not_implement_are_refused(key, value, expected):
    with pytest.raises(ArchitectureError) as info:
        make(MINILM_CONFIG_JSON | {key: value})
    prefix = f"invalid value {value!r} for config key {key!r} of architecture 'bert_encoder': "
    assert str(info.value).startswith(f"{prefix}{expected}; accepted keys: ")


def test_is_decoder_refused_for_minilm_too():
    with pytest.raises(ArchitectureError, match="config key 'is_decoder' of architecture 'minilm'"):
        make({"is_decoder": True}, "minilm")


def test_bert_model_type_asking_for_roberta_positions_is_refused():
    with pytest.raises(ArchitectureError, match="invalid value 'roberta' for config key 'position_ids' .*"
                       "expected 'bert' for model_type='bert', whose position ids run 0..T-1"):
        make(MINILM_CONFIG_JSON | {"position_ids": "roberta"})
