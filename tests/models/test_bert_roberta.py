"""``bert_encoder`` with RoBERTa's positions, against the real ``transformers.RobertaModel``.

RoBERTa has BertModel's module tree, so its state dict loads strictly either way; only the
position ids differ (``pad_token_id + 1`` onwards, skipping padding). The models here are
random-initialised from small configs: nothing is downloaded.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import mininn
import models
from models.bert import map_bert_keys
from models.errors import ArchitectureError

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

WORDS = "the a cat dog sat ran on far away from big small house mat and then home".split()
VOCAB = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, **{w: i + 4 for i, w in enumerate(WORDS)}}
TEXTS = ["the cat sat on the mat", "a dog", "", "the big dog ran far away from the small house and then home"]
SIZES = {
    "vocab_size": len(VOCAB), "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 48, "max_position_embeddings": 34, "type_vocab_size": 1, "pad_token_id": 1,
    "bos_token_id": 0, "eos_token_id": 2, "layer_norm_eps": 1e-5,
}
SIZES_OURS = {k: v for k, v in SIZES.items() if k not in ("bos_token_id", "eos_token_id")}
FAMILIES = ["RobertaModel", "XLMRobertaModel", "CamembertModel"]  # model_type roberta, xlm-roberta, camembert


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    """A folder with a RoBERTa-style ``tokenizer.json``: ``<s> ... </s>``, ``<pad>`` = 1."""
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel(VOCAB, unk_token="<unk>"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer.post_processor = tokenizers.processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    folder = tmp_path_factory.mktemp("roberta")
    tokenizer.save(str(folder / "tokenizer.json"))
    return folder


def hf_model(family="RobertaModel"):
    """A random RoBERTa-family model whose position embeddings matter (larger init than 0.02)."""
    config_cls = getattr(transformers, family.replace("Model", "Config"))
    config = config_cls(**SIZES, initializer_range=0.3, attn_implementation="eager")
    torch.manual_seed(0)
    return getattr(transformers, family)(config).eval()


def roberta_encoder(**config):
    """Our ``bert_encoder`` with the sizes of :func:`hf_model` and RoBERTa positions."""
    config = SIZES_OURS | {"position_ids": "roberta", "max_seq_length": 32} | config
    return models.create("bert_encoder", **config)


def loaded(model, reference):
    state = {k: mininn.tensor(v.detach().numpy()) for k, v in map_bert_keys(reference.state_dict()).items()}
    assert model.load_state_dict(state, strict=True) == ([], [])
    return model.eval()


def padded_batch():
    ids = np.array([[0, 5, 9, 7, 2, 1, 1], [0, 6, 2, 1, 1, 1, 1], [0, 4, 5, 6, 7, 8, 2]], dtype=np.int64)
    return ids, (ids != 1).astype(np.int64)


def hf_embeddings(reference, texts, tokenizer_dir):
    tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    tokenizer.enable_padding(pad_id=1, pad_token="<pad>")
    encodings = tokenizer.encode_batch(texts)
    ids = torch.tensor([e.ids for e in encodings])
    mask = torch.tensor([e.attention_mask for e in encodings])
    assert (mask == 0).any()  # the batch is padded
    with torch.no_grad():
        hidden = reference(input_ids=ids, attention_mask=mask).last_hidden_state  # (B, T, C)
    m = mask[:, :, None].to(hidden.dtype)
    pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)  # sentence-transformers' mean pooling
    return torch.nn.functional.normalize(pooled, p=2, dim=1).numpy()


@pytest.mark.parametrize("family", FAMILIES)
def test_served_hf_roberta_config_and_weights_match_transformers(family, tokenizer_dir):
    reference = hf_model(family)
    config = reference.config.to_dict() | {"max_seq_length": 32}  # config.json as it is, plus our key
    servable = models.servable("bert_encoder", config, resource_dir=tokenizer_dir)
    assert servable.config.position_ids == "roberta"
    loaded(servable.module, reference)
    with mininn.no_grad():
        got = servable.predict({"text": np.array([t.encode() for t in TEXTS], dtype=object)})["embedding"]
    want = hf_embeddings(reference, TEXTS, tokenizer_dir)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_roberta_hidden_states_match_at_every_position_padding_included():
    reference = hf_model()
    model = loaded(roberta_encoder(), reference)
    ids, mask = padded_batch()
    with mininn.no_grad():
        hidden, pooled = models.bert.BertModel.forward(model, mininn.from_numpy(ids), mininn.from_numpy(mask))
    with torch.no_grad():
        want = reference(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask))
    np.testing.assert_allclose(hidden.numpy(), want.last_hidden_state.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(pooled.numpy(), want.pooler_output.numpy(), rtol=1e-5, atol=1e-6)


def test_roberta_position_ids_follow_create_position_ids_from_input_ids():
    from transformers.models.roberta.modeling_roberta import RobertaEmbeddings

    ids, _ = padded_batch()
    got = roberta_encoder().embeddings._position_ids(mininn.from_numpy(ids)).numpy()
    want = RobertaEmbeddings.create_position_ids_from_input_ids(torch.from_numpy(ids), padding_idx=1).numpy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got[0], [2, 3, 4, 5, 6, 1, 1])


def test_roberta_weights_with_bert_positions_give_other_states():
    """The check above has teeth: BERT positions on the same weights are far off."""
    reference = hf_model()
    state = map_bert_keys(reference.state_dict())
    key = "embeddings.position_embeddings.weight"
    state[key] = state[key][:33]
    model = roberta_encoder(position_ids="bert", max_position_embeddings=33).eval()  # 33 - 2: not RoBERTa's
    model.load_state_dict({k: mininn.tensor(v.detach().numpy()) for k, v in state.items()}, strict=True)
    ids, mask = padded_batch()
    with mininn.no_grad():
        hidden, _ = models.bert.BertModel.forward(model, mininn.from_numpy(ids), mininn.from_numpy(mask))
    with torch.no_grad():
        want = reference(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask))
    keep = mask.astype(bool)
    assert np.abs(hidden.numpy()[keep] - want.last_hidden_state.numpy()[keep]).max() > 0.1


def test_roberta_position_embeddings_have_hf_padding_row():
    reference = hf_model()
    positions = roberta_encoder().embeddings.position_embeddings
    assert positions.padding_idx == reference.embeddings.position_embeddings.padding_idx == 1
    np.testing.assert_array_equal(positions.weight.detach().numpy()[1], 0.0)
    assert models.create("bert_encoder").embeddings.position_embeddings.padding_idx is None


ROBERTA_BASE_CONFIG_JSON = {  # roberta-base's config.json on the Hugging Face Hub
    "architectures": ["RobertaForMaskedLM"], "attention_probs_dropout_prob": 0.1, "bos_token_id": 0,
    "eos_token_id": 2, "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768,
    "initializer_range": 0.02, "intermediate_size": 3072, "layer_norm_eps": 1e-05,
    "max_position_embeddings": 514, "model_type": "roberta", "num_attention_heads": 12,
    "num_hidden_layers": 12, "pad_token_id": 1, "type_vocab_size": 1, "vocab_size": 50265,
}


def test_roberta_base_config_json_selects_roberta_positions():
    config = models.get_architecture("bert_encoder").make_config(ROBERTA_BASE_CONFIG_JSON)
    assert (config.position_ids, config.max_position_embeddings, config.pad_token_id) == ("roberta", 514, 1)
    assert (config.max_seq_length, config.type_vocab_size, config.layer_norm_eps) == (512, 1, 1e-05)


@pytest.mark.parametrize(
    "config",
    [
        {"max_position_embeddings": 514, "pad_token_id": 1, "type_vocab_size": 1},  # roberta-base's sizes
        {"max_position_embeddings": 514, "pad_token_id": 1, "position_ids": "bert"},
        {"max_position_embeddings": 130, "pad_token_id": 1, "max_seq_length": 128},  # bertweet-base's sizes
    ],
)
def test_roberta_sizes_with_bert_positions_are_refused(config):
    with pytest.raises(ArchitectureError) as info:
        models.get_architecture("bert_encoder").make_config(config)
    message = str(info.value)
    assert "invalid value 'bert' for config key 'position_ids' of architecture 'bert_encoder'" in message
    assert "position ids run from pad_token_id + 1 = 2 and skip padding, BERT's run 0..T-1" in message
    assert 'set "position_ids": "roberta"' in message


def test_roberta_sizes_are_refused_for_minilm_too():
    with pytest.raises(ArchitectureError, match="config key 'position_ids' of architecture 'minilm'"):
        models.get_architecture("minilm").make_config({"max_position_embeddings": 514, "pad_token_id": 1})


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"max_position_embeddings": 514},  # pad 0: no reserved rows
        {"max_position_embeddings": 512, "pad_token_id": 1},  # 510 is not a power of two
    ],
)
def test_bert_sizes_keep_bert_positions(config):
    assert models.get_architecture("bert_encoder").make_config(config).position_ids == "bert"


def test_roberta_hf_config_asking_for_bert_positions_is_refused():
    config = ROBERTA_BASE_CONFIG_JSON | {"position_ids": "bert"}
    with pytest.raises(ArchitectureError, match="invalid value 'bert' for config key 'position_ids' .*"
                       "expected 'roberta' for model_type='roberta', whose position ids run pad_token_id"):
        models.get_architecture("bert_encoder").make_config(config)


def test_roberta_max_seq_length_leaves_room_for_the_padding_offset():
    config = {"position_ids": "roberta", "max_position_embeddings": 514, "pad_token_id": 1,
              "max_seq_length": 513}
    with pytest.raises(ArchitectureError, match="config key 'max_seq_length' .*expected at most "
                       "max_position_embeddings - pad_token_id - 1 = 512 with RoBERTa positions"):
        models.get_architecture("bert_encoder").make_config(config)


def test_map_bert_keys_strips_the_roberta_prefix():
    tensors = {"roberta.embeddings.word_embeddings.weight": 1, "roberta.embeddings.position_ids": 2,
               "roberta.pooler.dense.bias": 3}
    assert map_bert_keys(tensors) == {"embeddings.word_embeddings.weight": 1, "pooler.dense.bias": 3}

