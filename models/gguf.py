"""GGUF files (llama.cpp's format) as a ``llama`` config and a Hugging Face state dict.

Read with the ``gguf`` package (llama.cpp's own reader, imported only when a GGUF file is
read): ``GGUFReader`` maps the file, ``gguf.quants.dequantize`` turns each tensor (F32, F16,
BF16, Q8_0, Q4_0, Q4_1, the K-quants, ...) into float32. What comes out equals what
``transformers`` builds with ``from_pretrained(folder, gguf_file=...)``:

- the config from the ``llama.*`` metadata (:data:`METADATA_KEYS`), ``tie_word_embeddings``
  when the file has no ``output.weight``, and the special token ids;
- tensors renamed to ``LlamaForCausalLM``'s keys (:func:`hf_name`), a tied ``lm_head.weight``
  added, and the Q and K projections' rows put back in Hugging Face's rotary order: llama.cpp's
  converter interleaves the two halves of each head (``reshape(heads, 2, d/2, C).swapaxes(1, 2)``),
  which :func:`unpermute` reverses.

The tokenizer and chat template are in the same file's metadata (``tokenizer.*``); the reader
is kept (:attr:`GGUFModel.reader`) for the tokenizer code to read them.
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from models.errors import ArchitectureError

__all__ = [
    "GGUFError",
    "GGUFModel",
    "METADATA_KEYS",
    "attach_tokenizer",
    "gguf_config",
    "hf_name",
    "is_gguf",
    "open_reader",
    "read_for_config",
    "read_gguf",
    "unpermute",
]

logger = logging.getLogger(__name__)

MAGIC = b"GGUF"

# llama.<key> -> LlamaConfig key
METADATA_KEYS = {
    "context_length": "max_position_embeddings",
    "block_count": "num_hidden_layers",
    "feed_forward_length": "intermediate_size",
    "embedding_length": "hidden_size",
    "rope.dimension_count": "head_dim",
    "rope.freq_base": "rope_theta",
    "attention.head_count": "num_attention_heads",
    "attention.head_count_kv": "num_key_value_heads",
    "attention.layer_norm_rms_epsilon": "rms_norm_eps",
    "vocab_size": "vocab_size",
}

LAYER_NAMES = {  # GGUF block tensor -> LlamaForCausalLM module (also models.gguf_export)
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
TOP_NAMES = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}
_LAYER = re.compile(r"blk\.(\d+)\.([a-z_]+)\.(weight|bias)")


class GGUFError(ArchitectureError):
    """A GGUF file that cannot be read, or that does not hold a model this architecture serves."""


@dataclass
class GGUFModel:
    """A GGUF file read as a ``llama`` model.

    Attributes:
        config: The ``llama`` config keys (Hugging Face names) from the metadata.
        tensors: Hugging Face state-dict keys -> float32 arrays.
        reader: The ``gguf.GGUFReader`` (for the tokenizer metadata).
        tensor_types: Hugging Face key -> the GGUF tensor type name (``Q4_1``, ``F32``, ...).
    """

    config: dict[str, Any]
    tensors: dict[str, np.ndarray]
    reader: Any
    tensor_types: dict[str, str]


def is_gguf(path: Path) -> bool:
    """Whether the file starts with GGUF's magic bytes."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == MAGIC
    except OSError:
        return False


def open_reader(path: Path) -> Any:
    """``gguf.GGUFReader(path)``.

    Raises:
        GGUFError: ``gguf`` is not installed, or the file is not a readable GGUF file.
    """
    try:
        import gguf
    except ImportError:
        raise GGUFError("reading GGUF files needs the gguf package: pip install gguf") from None
    try:
        return _plain_array_reader(gguf)(str(path), "r")
    except Exception as exc:  # the reader raises whatever its parsing hits on bad bytes
        raise GGUFError(f"not a readable GGUF file: {type(exc).__name__}: {exc}") from None


@functools.cache
def _plain_array_reader(gguf: Any) -> type:
    """``gguf.GGUFReader`` parsing through a plain ndarray view of its memory map.

    The reader slices its buffer once per metadata value; on an ``np.memmap`` every slice pays
    the subclass's bookkeeping, 10 of a load's 18 s for a 49k-token vocabulary. A plain view of
    the same mapping parses the same bytes (tensors stay views of the file) in about a tenth.
    """

    class PlainArrayReader(gguf.GGUFReader):  # type: ignore[misc]
        @property
        def data(self) -> np.ndarray:
            return self._plain_data

        @data.setter
        def data(self, value: np.ndarray) -> None:
            self._plain_data = value.view(np.ndarray)  # its base keeps the mapping alive

    return PlainArrayReader


def read_gguf(path: Path, reader: Any = None) -> GGUFModel:
    """The config and dequantized Hugging Face state dict of a llama GGUF file.

    Raises:
        GGUFError: unreadable bytes, another architecture, missing metadata, or a tensor this
            architecture does not have.
    """
    reader = reader if reader is not None else open_reader(path)
    config = gguf_config(reader)
    tensors: dict[str, np.ndarray] = {}
    types: dict[str, str] = {}
    for tensor in reader.tensors:
        key = hf_name(tensor.name)
        tensors[key] = _dequantized(tensor, key, config)
        types[key] = tensor.tensor_type.name
    if config["tie_word_embeddings"] and "model.embed_tokens.weight" in tensors:
        tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"]
    return GGUFModel(config, tensors, reader, types)


def gguf_config(reader: Any) -> dict[str, Any]:
    """The ``llama`` config of a GGUF file's metadata.

    Raises:
        GGUFError: not a llama file, or a required key is missing.
    """
    architecture = field_value(reader, "general.architecture")
    if architecture != "llama":
        raise GGUFError(f"the GGUF file's general.architecture is {architecture!r}; only 'llama' is served")
    config: dict[str, Any] = {}
    for key, name in METADATA_KEYS.items():
        value = field_value(reader, f"llama.{key}")
        if value is not None:
            config[name] = value
    if "vocab_size" not in config:
        tokens = reader.fields.get("tokenizer.ggml.tokens")
        if tokens is not None:
            config["vocab_size"] = len(tokens.data)
    for required in ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
                     "intermediate_size"):
        if required not in config:
            raise GGUFError(f"the GGUF file has no metadata for {required} (llama.* keys)")
    _rope_scaling(reader, config)
    config["tie_word_embeddings"] = all(t.name != "output.weight" for t in reader.tensors)
    for which in ("bos", "eos", "padding"):
        value = field_value(reader, f"tokenizer.ggml.{which}_token_id")
        if value is not None:
            config["pad_token_id" if which == "padding" else f"{which}_token_id"] = value
    return config


def _rope_scaling(reader: Any, config: dict[str, Any]) -> None:
    kind = field_value(reader, "llama.rope.scaling.type")
    if any(t.name == "rope_freqs.weight" for t in reader.tensors):
        raise GGUFError("the GGUF file has per-frequency RoPE factors (rope_freqs.weight, llama 3.1's "
                        "scaling), which are not implemented for GGUF; load the Hugging Face "
                        "safetensors with its config.json instead")
    if kind in (None, "none"):
        return
    factor = field_value(reader, "llama.rope.scaling.factor")
    if kind != "linear" or factor is None:
        raise GGUFError(f"the GGUF file's RoPE scaling {kind!r} is not implemented (only 'linear')")
    config["rope_scaling"] = {"rope_type": "linear", "factor": float(factor)}


def field_value(reader: Any, key: str) -> Any:
    """A metadata value as a Python scalar or string (arrays as lists); None when absent."""
    field = reader.fields.get(key)
    if field is None:
        return None
    try:
        value = field.contents()
    except Exception as exc:
        raise GGUFError(f"cannot read the GGUF metadata key {key!r}: {exc}") from None
    if isinstance(value, (np.generic,)):
        return value.item()
    return value


def hf_name(name: str) -> str:
    """The ``LlamaForCausalLM`` state-dict key of a GGUF tensor name.

    Raises:
        GGUFError: a tensor the llama architecture does not have.
    """
    base, _, kind = name.rpartition(".")
    if base in TOP_NAMES and kind == "weight":
        return f"{TOP_NAMES[base]}.weight"
    match = _LAYER.fullmatch(name)
    if match and match.group(2) in LAYER_NAMES:
        return f"model.layers.{match.group(1)}.{LAYER_NAMES[match.group(2)]}.{match.group(3)}"
    raise GGUFError(f"the GGUF file has a tensor {name!r} that a llama model does not have")


def unpermute(weights: np.ndarray, heads: int) -> np.ndarray:
    """Undo llama.cpp's rotary permutation of a Q or K projection (rows: ``heads * head_dim``)."""
    half = weights.shape[0] // heads // 2
    return weights.reshape(heads, half, 2, *weights.shape[1:]).swapaxes(1, 2).reshape(weights.shape)


def _dequantized(tensor: Any, key: str, config: dict[str, Any]) -> np.ndarray:
    from gguf.quants import dequantize

    try:
        array = np.asarray(dequantize(tensor.data, tensor.tensor_type), dtype=np.float32)
    except NotImplementedError as exc:
        raise GGUFError(f"tensor {tensor.name!r}: {exc}") from None
    shape = tuple(int(d) for d in reversed(tensor.shape))  # GGUF lists dims innermost first
    if array.size != int(np.prod(shape)):
        raise GGUFError(f"tensor {tensor.name!r} holds {array.size} values for the shape {list(shape)}")
    array = array.reshape(shape)
    if key.endswith("self_attn.q_proj.weight") or key.endswith("self_attn.q_proj.bias"):
        array = unpermute(array, int(config["num_attention_heads"]))
    elif key.endswith("self_attn.k_proj.weight") or key.endswith("self_attn.k_proj.bias"):
        array = unpermute(array, int(config.get("num_key_value_heads", config["num_attention_heads"])))
    return np.ascontiguousarray(array)


def read_for_config(path: Path, config: Any, reader: Any = None) -> GGUFModel:
    """:func:`read_gguf`, checked against the ``llama`` config a model was built with.

    Raises:
        GGUFError: unreadable, or the file's metadata gives a config value other than ``config``'s
            (the message names each key, both values, and the config to put in ``model.json``).
    """
    model = read_gguf(path, reader)
    different = []
    effective = {"head_dim": "dim_per_head", "num_key_value_heads": "kv_heads"}  # None: the default
    for key, value in model.config.items():
        have = getattr(config, effective.get(key, key), None)
        close = isinstance(value, float) and isinstance(have, float) and bool(np.isclose(have, value))
        if have != value and not close:
            different.append(f"{key}: the file has {value!r}, model.json {have!r}")
    if different:
        import json

        raise GGUFError(
            "its metadata does not match model.json's config: " + "; ".join(different)
            + f'; use "config": {json.dumps(model.config)} in model.json'
        )
    return model


def attach_tokenizer(servable: Any, reader: Any) -> None:
    """Give ``servable.generator`` the tokenizer and chat template of a GGUF file's metadata.

    Uses ``models.text_tokenizer.load_gguf_tokenizer(reader)``; a generator that already has
    a tokenizer (from ``tokenizer.json``) keeps it.
    """
    generator = getattr(servable, "generator", None)
    if generator is None or getattr(generator, "tokenizer", None) is not None:
        return
    if "tokenizer.ggml.model" not in reader.fields:
        return  # weights only: the model takes token ids
    try:
        from models.text_tokenizer import load_gguf_tokenizer
    except ImportError:
        logger.warning("no GGUF tokenizer support (models.text_tokenizer): the model takes token ids only")
        return
    generator.tokenizer = load_gguf_tokenizer(reader)
