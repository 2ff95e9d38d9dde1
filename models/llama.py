"""``llama``: Hugging Face's ``LlamaForCausalLM``, module for module, with a per-sequence KV cache.

The module tree and state-dict keys are transformers' (``model.embed_tokens``,
``model.layers.N.self_attn.{q,k,v,o}_proj``, ``model.layers.N.mlp.{gate,up,down}_proj``,
``model.layers.N.input_layernorm``, ``post_attention_layernorm``, ``model.norm``, ``lm_head``),
so a ``LlamaForCausalLM`` safetensors state dict loads strictly (a tied ``lm_head`` may be
left out, as transformers leaves it out), and a forward hook on ``model.layers.N`` sees that
layer's hidden states. The arithmetic follows transformers' eager code where it is specific:
RMSNorm in float32, weight applied after casting back; rotary tables of float32 values cast
to the model's dtype. A float64 model computes both in float64 (transformers computes them
in float32 whatever the dtype: two float32 islands whose roundings differ between libraries);
``rope_scaling`` of type ``linear`` and ``llama3``.

``forward(input_ids)`` runs the whole sequence (causal attention, as ``/infer`` serves it);
generation goes through :class:`models.llama_generation.LlamaGenerator`, which passes a
:class:`~models.kv_cache.CachedBatch` so each sequence attends over its own cache.

The config is Hugging Face's ``config.json`` as it is (:class:`LlamaConfig`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

import mininn
import mininn.nn.functional as F
from mininn import Tensor, nn
from mininn.autograd.graph import ArrayFunction, Context
from models.config import require
from models.kv_cache import ROW_WISE_DECODE, CachedAttention, CachedBatch, SequenceCache, array_module
from models.registry import Architecture, register
from models.signature import Signature, TensorSpec

__all__ = ["HF_IGNORED_KEYS", "LlamaConfig", "LlamaForCausalLM", "LlamaModel", "ROPE_TYPES", "signature"]

ROPE_TYPES = ("default", "linear", "llama3")

HF_IGNORED_KEYS = frozenset({
    "_name_or_path", "_commit_hash", "architectures", "transformers_version", "torch_dtype", "dtype",
    "use_bfloat16", "id2label", "label2id", "num_labels", "problem_type", "finetuning_task",
    "initializer_range", "gradient_checkpointing", "return_dict", "output_attentions",
    "output_hidden_states", "torchscript", "use_cache", "chunk_size_feed_forward", "is_encoder_decoder",
    "tokenizer_class", "prefix", "task_specific_params", "attention_dropout", "pretraining_tp",
    "max_length", "min_length", "do_sample", "temperature", "top_k", "top_p", "repetition_penalty",
    "num_beams", "sep_token_id", "decoder_start_token_id",
})


@dataclass(frozen=True)
class LlamaConfig:
    """Hugging Face ``LlamaConfig``'s keys, with its defaults.

    A ``config.json`` of transformers 4 (``rope_theta`` + ``rope_scaling``) or 5
    (``rope_parameters``) is accepted as it is (:meth:`prepare_mapping`); keys that do not change
    the forward pass (``HF_IGNORED_KEYS``: provenance, initialisation, dropout, caching flags,
    generation defaults) are dropped, and any other unknown key is refused.
    """

    vocab_size: int = 32000  # rows of model.embed_tokens and lm_head
    hidden_size: int = 4096  # width of every hidden state
    intermediate_size: int = 11008  # width of the SwiGLU MLP
    num_hidden_layers: int = 32  # model.layers.0 .. N-1
    num_attention_heads: int = 32  # query heads
    num_key_value_heads: int | None = None  # key/value heads (grouped-query attention); None: as queries
    head_dim: int | None = None  # None: hidden_size // num_attention_heads
    hidden_act: Literal["silu"] = "silu"  # the MLP's gate activation
    max_position_embeddings: int = 2048  # the context length served
    rms_norm_eps: float = 1e-6  # epsilon of every RMSNorm
    rope_theta: float = 10000.0  # rotary base
    rope_scaling: dict | None = None  # {"rope_type": "linear" | "llama3", ...}; None: plain rotary
    tie_word_embeddings: bool = False  # lm_head shares model.embed_tokens' weight
    attention_bias: bool = False  # biases on q/k/v/o_proj
    mlp_bias: bool = False  # biases on gate/up/down_proj
    bos_token_id: int | None = 1
    eos_token_id: int | tuple[int, ...] | None = 2
    pad_token_id: int | None = None

    def __post_init__(self) -> None:
        for key in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                    "num_attention_heads", "max_position_embeddings"):
            require(getattr(self, key) > 0, key, getattr(self, key), "a positive integer")
        kv = self.kv_heads
        require(kv > 0 and self.num_attention_heads % kv == 0, "num_key_value_heads",
                self.num_key_value_heads,
                f"a positive divisor of num_attention_heads={self.num_attention_heads}")
        if self.head_dim is None:
            require(self.hidden_size % self.num_attention_heads == 0, "num_attention_heads",
                    self.num_attention_heads,
                    f"a divisor of hidden_size={self.hidden_size} (or set head_dim)")
        require(self.dim_per_head > 0 and self.dim_per_head % 2 == 0, "head_dim", self.head_dim,
                "a positive even number (rotary embeddings rotate pairs)")
        require(self.rms_norm_eps > 0, "rms_norm_eps", self.rms_norm_eps, "a positive number")
        require(self.rope_theta > 0, "rope_theta", self.rope_theta, "a positive number")
        _check_rope_scaling(self.rope_scaling)

    @property
    def kv_heads(self) -> int:
        """The number of key/value heads."""
        return self.num_attention_heads if self.num_key_value_heads is None else self.num_key_value_heads

    @property
    def dim_per_head(self) -> int:
        """The width of one head."""
        return self.head_dim if self.head_dim is not None else self.hidden_size // self.num_attention_heads

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        """Every end-of-sequence id of the config."""
        eos = self.eos_token_id
        return () if eos is None else (eos,) if isinstance(eos, int) else tuple(eos)

    @classmethod
    def prepare_mapping(cls, values: Mapping[str, Any]) -> dict[str, Any]:
        """A Hugging Face ``config.json`` in this config's keys.

        Raises:
            ConfigValueError: a ``model_type`` other than ``"llama"``, an ``hidden_act`` other
                than ``"silu"``, or ``rope_parameters`` that contradict ``rope_theta``.
        """
        values = dict(values)
        model_type = values.pop("model_type", "llama")
        require(model_type == "llama", "model_type", model_type, "'llama' (LlamaForCausalLM's module tree)")
        parameters = values.pop("rope_parameters", None)
        if parameters is not None:
            require(isinstance(parameters, dict), "rope_parameters", parameters, "an object")
            parameters = dict(parameters)
            theta = parameters.pop("rope_theta", values.get("rope_theta", 10000.0))
            require(values.get("rope_theta", theta) == theta, "rope_parameters", parameters,
                    f"the same rope_theta as rope_theta={values.get('rope_theta')}")
            values["rope_theta"] = theta
            rope_type = parameters.get("rope_type", parameters.get("type", "default"))
            values["rope_scaling"] = None if rope_type == "default" else parameters
        scaling = values.get("rope_scaling")
        if isinstance(scaling, dict) and scaling.get("rope_type", scaling.get("type")) == "default":
            values["rope_scaling"] = None
        return {key: value for key, value in values.items() if key not in HF_IGNORED_KEYS}


def _check_rope_scaling(scaling: dict | None) -> None:
    if scaling is None:
        return
    rope_type = scaling.get("rope_type", scaling.get("type"))
    require(rope_type in ROPE_TYPES, "rope_scaling", scaling,
            f"a rope_type of {', '.join(repr(t) for t in ROPE_TYPES)} "
            "(other RoPE scalings are not implemented)")
    needed = {"linear": ("factor",),
              "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")}
    for key in needed.get(rope_type, ()):
        value = scaling.get(key)
        require(isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0, "rope_scaling",
                scaling, f"a positive number for {key!r} (rope_type {rope_type!r})")
    if rope_type == "llama3":
        require(scaling["high_freq_factor"] != scaling["low_freq_factor"], "rope_scaling", scaling,
                "different high_freq_factor and low_freq_factor")


def inverse_frequencies(config: LlamaConfig) -> np.ndarray:
    """The rotary inverse frequencies (float32), as transformers computes them for the config."""
    dim = config.dim_per_head
    exponents = np.arange(0, dim, 2, dtype=np.int64).astype(np.float32) / np.float32(dim)
    inv = np.float32(1.0) / (np.float32(config.rope_theta) ** exponents)
    scaling = config.rope_scaling or {}
    rope_type = scaling.get("rope_type", scaling.get("type", "default"))
    if rope_type == "linear":
        inv = inv / np.float32(scaling["factor"])
    elif rope_type == "llama3":
        inv = _llama3_frequencies(inv, scaling)
    return inv.astype(np.float32)


def _llama3_frequencies(inv: np.ndarray, scaling: Mapping[str, Any]) -> np.ndarray:
    f32 = np.float32
    factor, low, high = f32(scaling["factor"]), scaling["low_freq_factor"], scaling["high_freq_factor"]
    old = scaling["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    wavelen = f32(2 * math.pi) / inv
    scaled = np.where(wavelen > low_wavelen, inv / factor, inv)
    smooth = (f32(old) / wavelen - f32(low)) / f32(high - low)
    smoothed = (f32(1) - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return np.where(medium, smoothed, scaled).astype(f32)


class _RMSNorm(ArrayFunction):
    """``weight * (xc * rsqrt(mean(xc**2) + eps)).to(dtype)``, ``xc``: ``x`` in at least float32."""

    @staticmethod
    def forward(ctx: Context, x: Any, w: Any, eps: float) -> Any:
        xp = array_module(x)
        compute = xp.promote_types(x.dtype, xp.float32)
        xc = x.astype(compute, copy=False)
        variance = (xc * xc).mean(axis=-1, keepdims=True)
        variance += compute.type(eps)
        normed = xc * (compute.type(1) / xp.sqrt(variance))
        return w * normed.astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        raise RuntimeError("unreachable: LlamaRMSNorm differentiates through mininn ops")


class LlamaRMSNorm(nn.Module):
    """transformers' ``LlamaRMSNorm``: computed in float32 (float16, bfloat16 and float32 inputs), or
    float64 for float64 inputs (transformers computes those in float32 too), ``weight`` applied after
    casting back to the input's dtype."""

    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(mininn.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states: Tensor) -> Tensor:
        if mininn.is_grad_enabled() and (hidden_states.requires_grad or self.weight.requires_grad):
            x = hidden_states if hidden_states.dtype == mininn.float64 else hidden_states.to(mininn.float32)
            x = x * mininn.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
            return self.weight * x.to(hidden_states.dtype)
        return _RMSNorm.apply(hidden_states, self.weight, self.variance_epsilon)

    def extra_repr(self) -> str:
        return f"{tuple(self.weight.shape)}, eps={self.variance_epsilon}"


class _RowwiseLinear(ArrayFunction):
    """``x @ w.T + b`` one row at a time (matrix-vector products): a row's result does not
    depend on how many rows share the call (a matrix-matrix product's blocking does)."""

    @staticmethod
    def forward(ctx: Context, x: Any, w: Any, b: Any) -> Any:
        xp = array_module(x)
        rows = x.reshape(-1, x.shape[-1])
        wt = w.T
        out = xp.empty((rows.shape[0], w.shape[0]), dtype=x.dtype)
        for i in range(rows.shape[0]):
            out[i] = rows[i] @ wt
        if b is not None:
            out += b
        return out.reshape(x.shape[:-1] + (w.shape[0],))

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        raise RuntimeError("unreachable: a decode step runs under mininn.no_grad()")


class Linear(nn.Linear):
    """``nn.Linear`` (same parameters and keys) whose one-token-per-row inputs ``(B, 1, C)``
    are projected row by row, so decode steps are batch-invariant (unless
    :data:`ROW_WISE_DECODE` is false); other inputs as usual."""

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim == 3 and input.shape[1] == 1 and not mininn.is_grad_enabled() and ROW_WISE_DECODE.get():
            return _RowwiseLinear.apply(input, self.weight, self.bias)
        return F.linear(input, self.weight, self.bias)


class LlamaRotaryEmbedding(nn.Module):
    """Rotary tables: ``inv_freq`` (a non-persistent buffer, as in transformers) and ``forward(x,
    position_ids) -> (cos, sin)``, each ``(B, T, head_dim)`` in ``x``'s dtype, from tables of
    float32 values cached per dtype and device."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.register_buffer("inv_freq", mininn.tensor(inverse_frequencies(config)), persistent=False)
        self._tables: dict[Any, tuple[Tensor, Tensor]] = {}

    def forward(self, x: Tensor, position_ids: np.ndarray) -> tuple[Tensor, Tensor]:
        cos, sin = self.tables(int(position_ids.max()) + 1, x)
        index = mininn.as_tensor(position_ids, device=x.device)  # (B, T)
        return cos[index], sin[index]  # (B, T, hd) each

    def tables(self, length: int, like: Tensor) -> tuple[Tensor, Tensor]:
        """``cos``, ``sin`` tables ``(>= length, head_dim)`` in ``like``'s dtype and device."""
        dtype = like.dtype.np
        key = (dtype, str(like.device))
        cached = self._tables.get(key)
        if cached is None or cached[0].shape[0] < length:
            size = max(length, 2 * cached[0].shape[0] if cached is not None else 256)
            inv = np.asarray(self.inv_freq.detach().cpu().numpy(), dtype=np.float32)
            cos, sin = _rotary_tables(inv, size, dtype)
            cached = (mininn.as_tensor(cos, device=like.device), mininn.as_tensor(sin, device=like.device))
            self._tables[key] = cached
        return cached


def _rotary_tables(inv: np.ndarray, size: int, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """``cos``/``sin`` of positions ``0 .. size-1`` times ``inv`` (both halves), in ``dtype``.

    As transformers: float32 angles, and float32 values (here correctly rounded from float64),
    cast to ``dtype``; for a float64 model the angles and values are float64 throughout.
    """
    if dtype == np.float64:
        freqs = np.arange(size, dtype=np.float64)[:, None] * inv.astype(np.float64)[None, :]  # (P, hd/2)
    else:
        freqs = (np.arange(size, dtype=np.float32)[:, None] * inv[None, :]).astype(np.float64)  # (P, hd/2)
    emb = np.concatenate([freqs, freqs], axis=-1)  # (P, hd)
    if dtype == np.float64:
        return np.cos(emb), np.sin(emb)
    return tuple(f(emb).astype(np.float32).astype(dtype) for f in (np.cos, np.sin))  # type: ignore[return-value]


class LlamaAttention(nn.Module):
    """Grouped-query self-attention over each sequence's cache (``q/k/v/o_proj``)."""

    def __init__(self, config: LlamaConfig, layer_idx: int) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        self.num_heads, self.num_key_value_heads = config.num_attention_heads, config.kv_heads
        self.head_dim = config.dim_per_head
        self.scaling = self.head_dim**-0.5
        bias = config.attention_bias
        width, kv_width = self.num_heads * self.head_dim, self.num_key_value_heads * self.head_dim
        self.q_proj = Linear(config.hidden_size, width, bias=bias)
        self.k_proj = Linear(config.hidden_size, kv_width, bias=bias)
        self.v_proj = Linear(config.hidden_size, kv_width, bias=bias)
        self.o_proj = Linear(width, config.hidden_size, bias=bias)

    def forward(self, hidden_states: Tensor, position_embeddings: tuple[Tensor, Tensor],
                batch: CachedBatch) -> Tensor:
        q, k, v = (proj(hidden_states) for proj in (self.q_proj, self.k_proj, self.v_proj))  # (B, T, *)
        cos, sin = position_embeddings  # (B, T, hd)
        context = CachedAttention.apply(q, k, v, cos, sin, batch, self.layer_idx, self.num_heads,
                                        self.num_key_value_heads, self.scaling)  # (B, T, nh*hd)
        return self.o_proj(context)  # (B, T, C)


class LlamaMLP(nn.Module):
    """SwiGLU: ``down_proj(silu(gate_proj(x)) * up_proj(x))``."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        bias = config.mlp_bias
        self.gate_proj = Linear(config.hidden_size, config.intermediate_size, bias=bias)
        self.up_proj = Linear(config.hidden_size, config.intermediate_size, bias=bias)
        self.down_proj = Linear(config.intermediate_size, config.hidden_size, bias=bias)
        self.act_fn = nn.SiLU()

    def forward(self, x: Tensor) -> Tensor:
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))  # (B, T, C)


class LlamaDecoderLayer(nn.Module):
    """Pre-norm attention and MLP blocks with residuals; its output is the layer's hidden states."""

    def __init__(self, config: LlamaConfig, layer_idx: int) -> None:
        super().__init__()
        self.self_attn = LlamaAttention(config, layer_idx)
        self.mlp = LlamaMLP(config)
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, hidden_states: Tensor, position_embeddings: tuple[Tensor, Tensor],
                batch: CachedBatch) -> Tensor:
        normed = self.input_layernorm(hidden_states)  # (B, T, C)
        attended = self.self_attn(normed, position_embeddings, batch)  # (B, T, C)
        hidden_states = hidden_states + attended
        return hidden_states + self.mlp(self.post_attention_layernorm(hidden_states))  # (B, T, C)


class LlamaModel(nn.Module):
    """Embeddings, the decoder layers, the final norm: ``(B, T)`` ids -> ``(B, T, C)`` states."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size,
                                         padding_idx=config.pad_token_id)
        self.layers = nn.ModuleList([LlamaDecoderLayer(config, i) for i in range(config.num_hidden_layers)])
        self.norm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.rotary_emb = LlamaRotaryEmbedding(config)

    def forward(self, input_ids: Tensor, batch: CachedBatch) -> Tensor:
        hidden = self.embed_tokens(input_ids)  # (B, T, C)
        starts = np.asarray(batch.starts, dtype=np.int64)
        positions = starts[:, None] + np.arange(input_ids.shape[1])  # (B, T)
        position_embeddings = self.rotary_emb(hidden, positions)  # (B, T, hd) x 2
        for layer in self.layers:
            hidden = layer(hidden, position_embeddings, batch)  # (B, T, C)
        return self.norm(hidden)


class LlamaForCausalLM(nn.Module):
    """``model`` (:class:`LlamaModel`) and ``lm_head``; ``forward(input_ids) -> logits (B, T, V)``.

    Args of ``forward``:
        input_ids: ``(B, T)`` token ids.
        cache: the rows' caches and start positions (generation); None: a fresh cache per row,
            positions ``0 .. T-1``, dropped afterwards.
        last_only: logits of the last position only, ``(B, 1, V)`` (what generation needs).
    """

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.config = config
        self.model = LlamaModel(config)
        self.lm_head = Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, input_ids: Tensor, cache: CachedBatch | None = None, last_only: bool = False) -> Tensor:
        if cache is None:
            rows = input_ids.shape[0]
            cache = CachedBatch([SequenceCache() for _ in range(rows)], [0] * rows)
        hidden = self.model(input_ids, cache)  # (B, T, C)
        if last_only:
            hidden = hidden[:, -1:]  # (B, 1, C)
        return self.lm_head(hidden)  # (B, T, V)

    def _load_from_state_dict(
        self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any
    ) -> None:
        # A tied checkpoint may leave lm_head.weight out (transformers does); it is embed_tokens'.
        head, embed = prefix + "lm_head.weight", prefix + "model.embed_tokens.weight"
        if self.config.tie_word_embeddings and head not in state_dict and embed in state_dict:
            state_dict[head] = state_dict[embed]
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


def signature(config: LlamaConfig) -> Signature:
    """``input_ids`` INT64 [-1, -1] -> ``logits`` FP32 [-1, -1, vocab_size]: one forward pass."""
    return Signature(
        inputs=[TensorSpec("input_ids", "INT64", (-1, -1))],
        outputs=[TensorSpec("logits", "FP32", (-1, -1, config.vocab_size))],
    )


def _generator(servable: Any) -> Any:
    from models.llama_generation import LlamaGenerator  # it imports this module

    return LlamaGenerator(servable.module)


register(
    Architecture(
        name="llama",
        config_cls=LlamaConfig,
        build=LlamaForCausalLM,
        signature=signature,
        batchable=False,
        generator=_generator,
        description="LLaMA-family causal language model (Hugging Face LlamaForCausalLM), KV cache",
    )
)
