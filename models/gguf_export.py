"""Writing a ``llama`` state dict as a GGUF file (with the ``gguf`` package's writer).

The inverse of :func:`models.gguf.read_gguf`: Hugging Face keys become GGUF tensor names, the
Q and K projections are permuted into llama.cpp's rotary layout, and the config goes into the
``llama.*`` metadata. Tensors are written as F32, or quantized (``Q8_0``, ``Q4_0``, ...) with
``gguf.quants.quantize`` where their rows allow it. No tokenizer is written: the file serves
token ids only unless tokenizer metadata is added.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from models.gguf import LAYER_NAMES, METADATA_KEYS, TOP_NAMES, GGUFError

__all__ = ["gguf_name", "permute", "write_gguf"]

_INTEGER_KEYS = {"max_position_embeddings", "num_hidden_layers", "intermediate_size", "hidden_size",
                 "head_dim", "num_attention_heads", "num_key_value_heads", "vocab_size"}


def permute(weights: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's rotary layout of a Q or K projection: each head's two halves interleaved."""
    half = weights.shape[0] // heads // 2
    return weights.reshape(heads, 2, half, *weights.shape[1:]).swapaxes(1, 2).reshape(weights.shape)


def gguf_name(key: str) -> str:
    """The GGUF tensor name of a ``LlamaForCausalLM`` state-dict key.

    Raises:
        GGUFError: a key a llama model does not have.
    """
    for gguf, hf in TOP_NAMES.items():
        if key == f"{hf}.weight":
            return f"{gguf}.weight"
    parts = key.split(".")
    if len(parts) >= 5 and parts[:2] == ["model", "layers"]:
        module, kind = ".".join(parts[3:-1]), parts[-1]
        for gguf, hf in LAYER_NAMES.items():
            if hf == module:
                return f"blk.{parts[2]}.{gguf}.{kind}"
    raise GGUFError(f"{key!r} is not a key of a llama model")


def write_gguf(path: Path, config: Any, state: Mapping[str, Any], *, quantize: str = "") -> None:
    """Write ``state`` (a ``llama`` state dict) and ``config`` (a ``LlamaConfig``) to ``path``.

    Args:
        path: The file to write.
        config: The model's :class:`~models.llama.LlamaConfig`.
        state: Hugging Face keys -> arrays (mininn tensors or NumPy); a tied ``lm_head.weight``
            is left out, as llama.cpp leaves it out.
        quantize: A ``gguf.GGMLQuantizationType`` name for the 2-D tensors, or "" for F32.
    """
    import gguf

    writer = gguf.GGUFWriter(str(path), "llama")
    for key, name in METADATA_KEYS.items():
        value = config.dim_per_head if name == "head_dim" else getattr(config, name)
        value = config.kv_heads if name == "num_key_value_heads" else value
        (writer.add_uint32 if name in _INTEGER_KEYS else writer.add_float32)(f"llama.{key}", value)
    for key, value in state.items():
        if key == "lm_head.weight" and config.tie_word_embeddings:
            continue
        array = np.ascontiguousarray(_host(value), dtype=np.float32)
        if key.endswith(("q_proj.weight", "q_proj.bias")):
            array = permute(array, config.num_attention_heads)
        elif key.endswith(("k_proj.weight", "k_proj.bias")):
            array = permute(array, config.kv_heads)
        if quantize and array.ndim == 2:
            qtype = getattr(gguf.GGMLQuantizationType, quantize)
            writer.add_tensor(gguf_name(key), gguf.quants.quantize(array, qtype), raw_dtype=qtype)
        else:
            writer.add_tensor(gguf_name(key), array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _host(value: Any) -> np.ndarray:
    return value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)
