"""``MultiheadAttention`` with torch's parameters, names, order and forward contract."""

from __future__ import annotations

from typing import Any

from mininn._factories import empty
from mininn.nn import init
from mininn.nn.functional.attention import _mha
from mininn.nn.modules.linear import Linear
from mininn.nn.modules.module import Module
from mininn.nn.parameter import Parameter
from mininn.tensor import Tensor

__all__ = ["MultiheadAttention"]


class NonDynamicallyQuantizableLinear(Linear):
    """A ``Linear`` under another name: the type of ``MultiheadAttention.out_proj`` in torch."""


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads of ``embed_dim / num_heads`` features each.

    Args:
        embed_dim: Total feature size ``E`` of the queries (and of the output).
        num_heads: Number of heads; must divide ``embed_dim``.
        dropout: Dropout on the attention weights in training. Default: 0.0.
        bias: Learn biases of the input and output projections. Default: True.
        add_bias_kv: Learn a key and a value appended to every sequence. Default: False.
        add_zero_attn: Append a zero key and value to every sequence. Default: False.
        kdim: Feature size of the keys. Default: ``embed_dim``.
        vdim: Feature size of the values. Default: ``embed_dim``.
        batch_first: Inputs and outputs are ``(N, L, E)`` rather than ``(L, N, E)``.
        device: Where the parameters live.
        dtype: Parameter dtype.

    Parameters (torch's names and order): ``in_proj_weight (3E, E)`` when
    ``kdim == vdim == E``, otherwise ``q_proj_weight (E, E)``, ``k_proj_weight
    (E, kdim)`` and ``v_proj_weight (E, vdim)``; ``in_proj_bias (3E)``;
    ``bias_k``/``bias_v (1, 1, E)``; the child ``out_proj``. The unused ones
    are registered as None.

    Raises:
        ValueError: ``embed_dim`` or ``num_heads`` is not positive.
        AssertionError: ``embed_dim`` is not divisible by ``num_heads`` (torch's message).
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                f"num_heads={num_heads} instead"
            )
        factory = {"device": device, "dtype": dtype}
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(empty((embed_dim, embed_dim), **factory))
            self.k_proj_weight = Parameter(empty((embed_dim, self.kdim), **factory))
            self.v_proj_weight = Parameter(empty((embed_dim, self.vdim), **factory))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(empty((3 * embed_dim, embed_dim), **factory))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **factory)
        if add_bias_kv:
            self.bias_k = Parameter(empty((1, 1, embed_dim), **factory))
            self.bias_v = Parameter(empty((1, 1, embed_dim), **factory))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """torch's init: xavier-uniform projections, zero biases, xavier-normal ``bias_k/v``."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` to ``key``/``value``.

        Args:
            query: ``(L, E)``, ``(L, N, E)``, or ``(N, L, E)`` with ``batch_first``.
            key: ``(S, kdim)``, ``(S, N, kdim)`` or ``(N, S, kdim)``.
            value: ``(S, vdim)``, ``(S, N, vdim)`` or ``(N, S, vdim)``.
            key_padding_mask: ``(N, S)`` or ``(S)``; True (or a float added to
                the scores) marks keys to ignore.
            need_weights: Also return the attention weights. Default: True.
            attn_mask: ``(L, S)`` or ``(N * num_heads, L, S)``; True (or a float
                added to the scores) blocks a query-key pair.
            average_attn_weights: Average the returned weights over heads.
            is_causal: Hint that ``attn_mask`` is the causal mask.

        Returns:
            ``(attn_output, attn_weights)``: the output in the layout of
            ``query``, and ``(N, L, S)`` (or ``(N, num_heads, L, S)``) weights,
            or None when ``need_weights`` is False.
        """
        batch_first = self.batch_first and query.ndim == 3
        return _mha(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, self.training, key_padding_mask,
            need_weights, attn_mask, not self._qkv_same_embed_dim,
            (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight), None, None,
            average_attn_weights, is_causal, batch_first=batch_first,
        )
