"""GGUF files as llama state dicts: names, llama.cpp's Q/K permutation, quantized tensors, bad files.

The files are written here with the ``gguf`` package's own writer from a random transformers
``LlamaForCausalLM``, permuting Q and K as llama.cpp's converter does, and read back both by
``models.gguf`` and by transformers' ``from_pretrained(..., gguf_file=...)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import models
from models.gguf import GGUFError, hf_name, read_gguf, unpermute

gguf = pytest.importorskip("gguf")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

CONFIG = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-5, rope_theta=10000.0,
              tie_word_embeddings=False)
GGUF_NAMES = {  # HF suffix -> GGUF name
    "input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}


def _permute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's converter: each head's two rotary halves interleaved."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _gguf_name(key: str) -> str:
    top = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
           "lm_head.weight": "output.weight"}
    if key in top:
        return top[key]
    _, _, layer, rest = key.split(".", 3)
    return f"blk.{layer}.{GGUF_NAMES[rest]}"


def write_gguf(path: Path, state: dict[str, np.ndarray], *, arch: str = "llama", quantize: str = "",
               extra_tensor: str = "") -> None:
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_uint32(f"{arch}.context_length", CONFIG["max_position_embeddings"])
    writer.add_uint32(f"{arch}.embedding_length", CONFIG["hidden_size"])
    writer.add_uint32(f"{arch}.block_count", CONFIG["num_hidden_layers"])
    writer.add_uint32(f"{arch}.feed_forward_length", CONFIG["intermediate_size"])
    writer.add_uint32(f"{arch}.attention.head_count", CONFIG["num_attention_heads"])
    writer.add_uint32(f"{arch}.attention.head_count_kv", CONFIG["num_key_value_heads"])
    writer.add_uint32(f"{arch}.rope.dimension_count", CONFIG["hidden_size"] // CONFIG["num_attention_heads"])
    writer.add_float32(f"{arch}.rope.freq_base", CONFIG["rope_theta"])
    writer.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", CONFIG["rms_norm_eps"])
    writer.add_uint32(f"{arch}.vocab_size", CONFIG["vocab_size"])
    for key, value in state.items():
        value = np.ascontiguousarray(value, dtype=np.float32)
        if key.endswith("q_proj.weight"):
            value = _permute(value, CONFIG["num_attention_heads"])
        elif key.endswith("k_proj.weight"):
            value = _permute(value, CONFIG["num_key_value_heads"])
        if quantize and value.ndim == 2:
            qtype = getattr(gguf.GGMLQuantizationType, quantize)
            writer.add_tensor(_gguf_name(key), gguf.quants.quantize(value, qtype), raw_dtype=qtype)
        else:
            writer.add_tensor(_gguf_name(key), value)
    if extra_tensor:
        writer.add_tensor(extra_tensor, np.ones(4, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@pytest.fixture(scope="module")
def hf_state() -> dict[str, np.ndarray]:
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**CONFIG))
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def test_float32_gguf_reads_back_the_hugging_face_state_dict(tmp_path: Path, hf_state: dict):
    write_gguf(tmp_path / "m.gguf", hf_state)
    model = read_gguf(tmp_path / "m.gguf")
    assert set(model.tensors) == set(hf_state)
    for key, value in hf_state.items():
        assert np.array_equal(model.tensors[key], value), key
    assert model.config["tie_word_embeddings"] is False
    built = models.get_architecture("llama").make_config(model.config)
    assert (built.num_key_value_heads, built.head_dim, built.vocab_size) == (2, 8, 64)


def test_q8_0_gguf_equals_transformers_from_pretrained(tmp_path: Path, hf_state: dict):
    write_gguf(tmp_path / "q8.gguf", hf_state, quantize="Q8_0")
    ours = read_gguf(tmp_path / "q8.gguf")
    auto = transformers.AutoModelForCausalLM
    theirs = auto.from_pretrained(tmp_path, gguf_file="q8.gguf", dtype=torch.float32)
    expected = theirs.state_dict()
    assert set(ours.tensors) == set(expected)
    for key, value in expected.items():
        assert np.array_equal(ours.tensors[key], value.numpy()), key
    assert ours.tensor_types["model.layers.0.self_attn.q_proj.weight"] == "Q8_0"
    assert not np.array_equal(ours.tensors["model.layers.0.mlp.up_proj.weight"],
                              hf_state["model.layers.0.mlp.up_proj.weight"])  # really quantized


def test_unpermute_inverts_llama_cpp_permutation():
    w = np.arange(8 * 3 * 5, dtype=np.float32).reshape(8 * 3, 5)
    assert np.array_equal(unpermute(_permute(w, 3), 3), w)
    assert not np.array_equal(_permute(w, 3), w)


@pytest.mark.parametrize(
    ("name", "expected"),
    [("token_embd.weight", "model.embed_tokens.weight"), ("output.weight", "lm_head.weight"),
     ("blk.11.attn_output.weight", "model.layers.11.self_attn.o_proj.weight"),
     ("blk.0.ffn_norm.weight", "model.layers.0.post_attention_layernorm.weight"),
     ("blk.3.attn_q.bias", "model.layers.3.self_attn.q_proj.bias")],
)
def test_gguf_names_map_to_hugging_face_keys(name: str, expected: str):
    assert hf_name(name) == expected


def test_not_a_gguf_file_is_refused(tmp_path: Path):
    path = tmp_path / "x.gguf"
    path.write_bytes(b"GGUF" + b"\x00" * 7)
    with pytest.raises(GGUFError, match="not a readable GGUF file"):
        read_gguf(path)


def test_another_architecture_is_refused(tmp_path: Path, hf_state: dict):
    write_gguf(tmp_path / "g.gguf", hf_state, arch="gemma")
    with pytest.raises(GGUFError, match="general.architecture is 'gemma'; only 'llama' is served"):
        read_gguf(tmp_path / "g.gguf")


@pytest.mark.parametrize(("tensor", "message"), [
    ("blk.0.attn_qkv.weight", "tensor 'blk.0.attn_qkv.weight' that a llama model does not have"),
    ("rope_freqs.weight", "rope_freqs.weight"),
])
def test_unknown_tensors_are_refused(tmp_path: Path, hf_state: dict, tensor: str, message: str):
    write_gguf(tmp_path / "u.gguf", hf_state, extra_tensor=tensor)
    with pytest.raises(GGUFError, match=message):
        read_gguf(tmp_path / "u.gguf")


def test_a_config_the_file_contradicts_is_named(tmp_path: Path, hf_state: dict):
    from models.gguf import read_for_config

    write_gguf(tmp_path / "m.gguf", hf_state)
    config = models.get_architecture("llama").make_config({**CONFIG, "rope_theta": 500000.0})
    with pytest.raises(GGUFError, match="rope_theta: the file has 10000.0, model.json 500000.0") as info:
        read_for_config(tmp_path / "m.gguf", config)
    assert '"config": {' in str(info.value)


def _module_logits(state: dict[str, Any], ids: np.ndarray) -> np.ndarray:
    import mininn

    module = models.create("llama", **CONFIG)
    module.load_state_dict(state, strict=True)
    with mininn.no_grad():
        return module.eval()(mininn.tensor(ids)).numpy()


def test_served_from_gguf_equals_transformers_logits(tmp_path: Path, hf_state: dict):
    write_gguf(tmp_path / "m.gguf", hf_state)
    ids = np.array([[1, 5, 9, 33, 2]])
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**CONFIG)).eval()
    model.load_state_dict({k: torch.from_numpy(v) for k, v in hf_state.items()})
    with torch.no_grad():
        expected = model(torch.tensor(ids)).logits.numpy()
    np.testing.assert_allclose(_module_logits(read_gguf(tmp_path / "m.gguf").tensors, ids), expected,
                               atol=1e-5, rtol=0)


def test_exported_gguf_reads_back_in_transformers_and_here(tmp_path: Path, hf_state: dict):
    from models.gguf_export import write_gguf as export

    config = models.get_architecture("llama").make_config(CONFIG)
    export(tmp_path / "e.gguf", config, hf_state, quantize="Q8_0")
    auto = transformers.AutoModelForCausalLM
    theirs = auto.from_pretrained(tmp_path, gguf_file="e.gguf", dtype=torch.float32).state_dict()
    ours = read_gguf(tmp_path / "e.gguf")
    eps = float(np.float32(CONFIG["rms_norm_eps"]))  # GGUF keeps it as float32
    assert ours.config == {**CONFIG, "head_dim": 8, "rms_norm_eps": eps}
    for key, value in theirs.items():
        assert np.array_equal(ours.tensors[key], value.numpy()), key


def test_the_tokenizer_of_the_gguf_metadata_is_given_to_the_generator(monkeypatch: pytest.MonkeyPatch):
    import sys
    import types

    from models.gguf import attach_tokenizer

    module = types.ModuleType("models.text_tokenizer")
    module.load_gguf_tokenizer = lambda reader: ("tokenizer of", reader)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "models.text_tokenizer", module)
    reader = types.SimpleNamespace(fields={"tokenizer.ggml.model": "gpt2"})
    servable = types.SimpleNamespace(generator=types.SimpleNamespace(tokenizer=None))
    attach_tokenizer(servable, reader)
    assert servable.generator.tokenizer == ("tokenizer of", reader)
    kept = types.SimpleNamespace(generator=types.SimpleNamespace(tokenizer="from tokenizer.json"))
    attach_tokenizer(kept, reader)
    assert kept.generator.tokenizer == "from tokenizer.json"
    weights_only = types.SimpleNamespace(generator=types.SimpleNamespace(tokenizer=None))
    attach_tokenizer(weights_only, types.SimpleNamespace(fields={}))
    assert weights_only.generator.tokenizer is None
