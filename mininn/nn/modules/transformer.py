"""``Transformer`` and its encoder and decoder stacks, with torch's children and numerics.

torch runs these layers through fused kernels in eval mode under no-grad
(its "fast path"), which give the same numbers as the plain computation done
here, with one visible exception that is reproduced: when
``TransformerEncoder`` gets a ``src_key_padding_mask`` on that path, torch
packs the sequences into a nested tensor (each keeps its first ``n`` positions,
``n`` = its number of unpadded keys) and the padded positions come back as
zeros (before the final ``norm``). ``TransformerEncoder.forward`` does the same
under exactly torch's conditions.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from mininn import _dtype
from mininn.autograd.grad_mode import is_grad_enabled
from mininn.nn import functional as F
from mininn.nn import init
from mininn.nn.functional.attention import canonical_mask
from mininn.nn.modules.activation import GELU, ReLU
from mininn.nn.modules.attention import MultiheadAttention
from mininn.nn.modules.container import ModuleList
from mininn.nn.modules.dropout import Dropout
from mininn.nn.modules.linear import Linear
from mininn.nn.modules.module import Module
from mininn.nn.modules.normalization import LayerNorm
from mininn.tensor import Tensor

__all__ = [
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
]


def _get_activation_fn(activation: str) -> Callable[[Tensor], Tensor]:
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _generate_square_subsequent_mask(size: int, dtype: Any) -> np.ndarray:
    """The float causal mask: ``-inf`` above the diagonal, 0 elsewhere."""
    return np.triu(np.full((size, size), -np.inf, dtype=dtype.np), k=1)


def _detect_is_causal_mask(mask: Tensor | None, is_causal: bool | None, size: int | None) -> bool:
    """``is_causal`` when given; otherwise whether ``mask`` equals the causal mask of ``size``."""
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.shape[-2]
        causal = _generate_square_subsequent_mask(sz, mask.dtype)
        make_causal = tuple(mask.shape) == causal.shape and bool((mask._data == causal).all())
    return make_causal


class _TransformerLayer(Module):
    """What the encoder and decoder layers share: torch's constructor and children, and the
    self-attention block. ``_cross_attention`` adds the decoder's ``multihead_attn`` over the
    memory, with a third norm and dropout.
    """

    _cross_attention = False

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        factory = {"device": device, "dtype": dtype}
        super().__init__()
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **factory
        )
        if self._cross_attention:
            self.multihead_attn = MultiheadAttention(
                d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **factory
            )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        if self._cross_attention:
            self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if self._cross_attention:
            self.dropout3 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        if not self._cross_attention:  # the encoder's fast-path flag in torch
            self.activation_relu_or_gelu = _relu_or_gelu(activation)
        self.activation = activation

    def _sa_block(self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
                  is_causal: bool = False) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)


def _relu_or_gelu(activation: Callable[[Tensor], Tensor]) -> int:
    """torch's ``activation_relu_or_gelu``: 1 for ReLU, 2 for GELU, 0 otherwise."""
    if activation is F.relu or isinstance(activation, ReLU):
        return 1
    if activation is F.gelu or isinstance(activation, GELU):
        return 2
    return 0


class TransformerEncoderLayer(_TransformerLayer):
    """Self-attention and a feed-forward block, each with a residual and a LayerNorm.

    Args:
        d_model: Feature size of the input and output.
        nhead: Number of attention heads.
        dim_feedforward: Hidden size of the feed-forward block. Default: 2048.
        dropout: Dropout probability everywhere. Default: 0.1.
        activation: ``"relu"``, ``"gelu"`` or a callable (a module is registered
            as a child). Default: ``F.relu``.
        layer_norm_eps: LayerNorm epsilon. Default: 1e-5.
        batch_first: ``(N, S, E)`` inputs instead of ``(S, N, E)``. Default: False.
        norm_first: Pre-norm (normalize before each block) instead of post-norm.
        bias: Learn biases of the linear and norm layers. Default: True.
        device: Where the parameters live.
        dtype: Parameter dtype.

    Children, in torch's order: ``self_attn``, ``linear1``, ``dropout``,
    ``linear2``, ``norm1``, ``norm2``, ``dropout1``, ``dropout2``.
    """

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        """Run the layer.

        Args:
            src: ``(S, E)``, ``(S, N, E)`` or ``(N, S, E)`` with ``batch_first``.
            src_mask: ``(S, S)`` or ``(N * nhead, S, S)`` attention mask.
            src_key_padding_mask: ``(N, S)`` (or ``(S)``); True marks padding.
            is_causal: Hint that ``src_mask`` is the causal mask.
        """
        src_key_padding_mask = canonical_mask(
            src_key_padding_mask, "src_key_padding_mask",
            None if src_mask is None else src_mask.dtype, "src_mask", src.dtype,
        )
        src_mask = canonical_mask(src_mask, "src_mask", None, "", src.dtype, check_other=False)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _ff_block(self, x: Tensor) -> Tensor:
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerEncoder(Module):
    """A stack of ``num_layers`` deep copies of ``encoder_layer`` and an optional final norm.

    Args:
        encoder_layer: The layer to copy (every copy starts with its weights).
        num_layers: Number of layers.
        norm: Optional module applied to the output.
        enable_nested_tensor: torch's switch for its padded fast path; here it
            decides, as in torch, whether padded outputs are zeroed in eval.
        mask_check: Check that padding masks are left-aligned before that path.
    """

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why_not = _why_not_sparsity_fast_path(encoder_layer)
        if enable_nested_tensor and why_not:
            warnings.warn(
                f"enable_nested_tensor is True, but self.use_nested_tensor is False because "
                f"{why_not}",
                stacklevel=2,
            )
            self.use_nested_tensor = False

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        """Run every layer in turn, then ``norm``.

        Args:
            src: ``(S, E)``, ``(S, N, E)`` or ``(N, S, E)`` with ``batch_first``.
            mask: ``(S, S)`` or ``(N * nhead, S, S)`` attention mask.
            src_key_padding_mask: ``(N, S)``; True marks padding.
            is_causal: Whether ``mask`` is causal; None detects it.
        """
        src_key_padding_mask = canonical_mask(
            src_key_padding_mask, "src_key_padding_mask",
            None if mask is None else mask.dtype, "mask", src.dtype,
        )
        mask = canonical_mask(mask, "mask", None, "", src.dtype, check_other=False)
        first = self.layers[0]
        batch_first = first.self_attn.batch_first
        zero_padding = self._takes_nested_path(src, mask, src_key_padding_mask)
        is_causal = _detect_is_causal_mask(mask, is_causal, _seq_len(src, batch_first))
        padded = None
        if zero_padding:
            assert src_key_padding_mask is not None
            padded = _nested_padding(src_key_padding_mask)
            src_key_padding_mask = Tensor(np.where(padded, -np.inf, 0.0).astype(src._data.dtype))
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=is_causal,
                           src_key_padding_mask=src_key_padding_mask)
        if padded is not None:
            output = output * Tensor(~padded[..., None]).to(output.dtype)
        if self.norm is not None:
            output = self.norm(output)
        return output

    def _takes_nested_path(self, src: Tensor, mask: Tensor | None,
                           key_padding_mask: Tensor | None) -> bool:
        """Whether torch would pack ``src`` into a nested tensor (zeroing padded outputs)."""
        first = self.layers[0]
        if not self.use_nested_tensor or first.training or src.ndim != 3:
            return False
        if key_padding_mask is None or mask is not None:
            return False
        valid = key_padding_mask._data == 0
        if self.mask_check and not bool((valid[:, 1:] <= valid[:, :-1]).all()):
            return False  # not left-aligned
        tensors = (src, first.self_attn.in_proj_weight, first.self_attn.in_proj_bias,
                   first.self_attn.out_proj.weight, first.self_attn.out_proj.bias,
                   first.norm1.weight, first.norm1.bias, first.norm2.weight, first.norm2.bias,
                   first.linear1.weight, first.linear1.bias, first.linear2.weight,
                   first.linear2.bias)
        return not (is_grad_enabled() and any(t.requires_grad for t in tensors))


def _nested_padding(key_padding_mask: Tensor) -> np.ndarray:
    """The padding torch's nested tensors see: each sequence keeps its first ``n`` positions,
    ``n`` being its number of unmasked keys (the same mask when it is left-aligned)."""
    valid = key_padding_mask._data == 0  # (N, S)
    lengths = valid.sum(axis=1, keepdims=True)
    return np.arange(valid.shape[1])[None, :] >= lengths


def _why_not_sparsity_fast_path(layer: Module) -> str:
    """torch's reason for not using nested tensors with ``layer``, or "" when it would."""
    name = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    if layer.norm_first:
        return f"{name}.norm_first was True"
    if not layer.self_attn.batch_first:
        return (f"{name}.self_attn.batch_first was not True"
                "(use batch_first for better inference performance)")
    if not layer.self_attn._qkv_same_embed_dim:
        return f"{name}.self_attn._qkv_same_embed_dim was not True"
    if layer.self_attn.in_proj_bias is None:
        return f"{name}.self_attn was passed bias=False"
    if not layer.activation_relu_or_gelu:
        return f"{name}.activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return f"{name}.norm1.eps was not equal to {name}.norm2.eps"
    if layer.self_attn.num_heads % 2 == 1:
        return f"{name}.self_attn.num_heads is odd"
    return ""


def _seq_len(x: Tensor, batch_first: bool) -> int:
    """The sequence length of ``(S, E)``, ``(S, N, E)`` or batch-first ``(N, S, E)``."""
    if x.ndim == 2:
        return x.shape[0]
    return x.shape[1 if batch_first else 0]


class TransformerDecoderLayer(_TransformerLayer):
    """Self-attention, cross-attention over ``memory`` and a feed-forward block,
    each with a residual and a LayerNorm.

    Takes the arguments of ``TransformerEncoderLayer`` (with ``batch_first``, the
    inputs are ``(N, T, E)`` instead of ``(T, N, E)``).

    Children, in torch's order: ``self_attn``, ``multihead_attn``, ``linear1``,
    ``dropout``, ``linear2``, ``norm1``, ``norm2``, ``norm3``, ``dropout1``,
    ``dropout2``, ``dropout3``.
    """

    _cross_attention = True

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """Run the layer.

        Args:
            tgt: ``(T, E)``, ``(T, N, E)`` or ``(N, T, E)`` with ``batch_first``.
            memory: The encoder output, ``(S, E)``, ``(S, N, E)`` or ``(N, S, E)``.
            tgt_mask: ``(T, T)`` or ``(N * nhead, T, T)`` self-attention mask.
            memory_mask: ``(T, S)`` or ``(N * nhead, T, S)`` cross-attention mask.
            tgt_key_padding_mask: ``(N, T)``; True marks padding.
            memory_key_padding_mask: ``(N, S)``; True marks padding.
            tgt_is_causal: Hint that ``tgt_mask`` is the causal mask.
            memory_is_causal: Hint that ``memory_mask`` is the causal mask.
        """
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask,
                                    memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                               memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _mha_block(self, x: Tensor, mem: Tensor, attn_mask: Tensor | None,
                   key_padding_mask: Tensor | None, is_causal: bool = False) -> Tensor:
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


class TransformerDecoder(Module):
    """A stack of ``num_layers`` deep copies of ``decoder_layer`` and an optional final norm.

    Args:
        decoder_layer: The layer to copy (every copy starts with its weights).
        num_layers: Number of layers.
        norm: Optional module applied to the output.
    """

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int,
                 norm: Module | None = None) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """Run every layer in turn on ``tgt`` (each attending to ``memory``), then ``norm``.

        ``tgt_is_causal=None`` detects whether ``tgt_mask`` is the causal mask.
        Other arguments are those of ``TransformerDecoderLayer.forward``.
        """
        seq_len = _seq_len(tgt, self.layers[0].self_attn.batch_first)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask,
                           tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """An encoder-decoder transformer ("Attention Is All You Need").

    Args:
        d_model: Feature size of the inputs and outputs. Default: 512.
        nhead: Number of attention heads. Default: 8.
        num_encoder_layers: Encoder depth. Default: 6.
        num_decoder_layers: Decoder depth. Default: 6.
        dim_feedforward: Hidden size of the feed-forward blocks. Default: 2048.
        dropout: Dropout probability everywhere. Default: 0.1.
        activation: ``"relu"``, ``"gelu"`` or a callable. Default: ``F.relu``.
        custom_encoder: A module used instead of the built encoder.
        custom_decoder: A module used instead of the built decoder.
        layer_norm_eps: LayerNorm epsilon. Default: 1e-5.
        batch_first: ``(N, S, E)`` inputs instead of ``(S, N, E)``. Default: False.
        norm_first: Pre-norm layers. Default: False.
        bias: Learn biases of the linear and norm layers. Default: True.
        device: Where the parameters live.
        dtype: Parameter dtype.

    Every parameter with more than one dimension (built or custom) is
    re-initialised with ``xavier_uniform_``, as torch does.
    """

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        custom_encoder: Any | None = None,
        custom_decoder: Any | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        factory = {"device": device, "dtype": dtype}
        super().__init__()
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                      batch_first, norm_first, bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            encoder_layer = TransformerEncoderLayer(*layer_args, **factory)
            encoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            self.encoder = TransformerEncoder(encoder_layer, num_encoder_layers, encoder_norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            decoder_layer = TransformerDecoderLayer(*layer_args, **factory)
            decoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            self.decoder = TransformerDecoder(decoder_layer, num_decoder_layers, decoder_norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """Encode ``src`` into a memory and decode ``tgt`` against it.

        Args:
            src: ``(S, E)``, ``(S, N, E)`` or ``(N, S, E)`` with ``batch_first``.
            tgt: ``(T, E)``, ``(T, N, E)`` or ``(N, T, E)`` with ``batch_first``.
            src_mask: ``(S, S)`` or ``(N * nhead, S, S)`` encoder attention mask.
            tgt_mask: ``(T, T)`` or ``(N * nhead, T, T)`` decoder self-attention mask.
            memory_mask: ``(T, S)`` or ``(N * nhead, T, S)`` cross-attention mask.
            src_key_padding_mask: ``(N, S)``; True marks padding.
            tgt_key_padding_mask: ``(N, T)``; True marks padding.
            memory_key_padding_mask: ``(N, S)``; True marks padding.
            src_is_causal: Whether ``src_mask`` is causal; None detects it.
            tgt_is_causal: Whether ``tgt_mask`` is causal; None detects it.
            memory_is_causal: Whether ``memory_mask`` is causal.

        Raises:
            RuntimeError: batch sizes of ``src`` and ``tgt`` differ, or a feature
                size is not ``d_model``.
        """
        batch_dim = 0 if self.batch_first else 1
        if src.ndim == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
        """The ``(sz, sz)`` float causal mask: ``-inf`` above the diagonal, 0 elsewhere."""
        dtype = _dtype.get_default_dtype() if dtype is None else dtype
        return Tensor(_generate_square_subsequent_mask(sz, dtype)).to(device)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)
