"""``Embedding`` (a lookup table of learnable vectors) and ``EmbeddingBag`` (per-bag sums, means
or maxima of its rows)."""

# ruff: noqa: A002 - torch names the forward argument `input`

from __future__ import annotations

from typing import Any

from mininn._factories import empty
from mininn.autograd.grad_mode import no_grad
from mininn.nn import functional as F
from mininn.nn import init
from mininn.nn.modules._utils import changed_settings
from mininn.nn.modules.module import Module
from mininn.nn.parameter import Parameter
from mininn.tensor import Tensor

__all__ = ["Embedding", "EmbeddingBag"]


class _EmbeddingTable(Module):
    """The ``weight`` table of ``Embedding`` and ``EmbeddingBag``, with its ``padding_idx`` row."""

    weight: Parameter
    padding_idx: int | None
    max_norm: float | None
    norm_type: float
    scale_grad_by_freq: bool

    def _init_weight(self, num_embeddings: int, embedding_dim: int, _weight: Tensor | None,
                     requires_grad: bool, device: Any, dtype: Any) -> None:
        """``_weight`` as the table, or a new one drawn by :meth:`reset_parameters`."""
        if _weight is None:
            self.weight = Parameter(empty((num_embeddings, embedding_dim), device=device, dtype=dtype),
                                    requires_grad=requires_grad)
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight, requires_grad=requires_grad)

    def reset_parameters(self) -> None:
        """Draw ``weight`` from N(0, 1) and zero the ``padding_idx`` row."""
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            with no_grad():
                self.weight._data[self.padding_idx] = 0

    def _lookup_repr(self) -> str:
        """The repr of the lookup settings that differ from their defaults."""
        return changed_settings(self, max_norm=None, norm_type=2, scale_grad_by_freq=False)


class Embedding(_EmbeddingTable):
    """Map integer indices to rows of ``weight`` (``(num_embeddings, embedding_dim)``, from N(0, 1)).

    Args:
        num_embeddings: table size.
        embedding_dim: vector size.
        padding_idx: a row that starts at zero and never receives a gradient
            (negative counts from the end).
        max_norm: rows looked up are first renormalised in place to at most this norm.
        norm_type: the p of the norm for ``max_norm``. Default 2.
        scale_grad_by_freq: divide each row's gradient by its count in the batch.
        sparse: accepted for compatibility; gradients are dense.
        _weight: use this tensor as the weight instead of drawing one.
        _freeze: with ``_weight``, whether the weight does not require grad.

    Raises:
        AssertionError: ``padding_idx`` outside the table, or ``_weight`` of the wrong shape.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight: Tensor | None = None, _freeze: bool = False,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            if padding_idx < 0:
                padding_idx = num_embeddings + padding_idx
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        self._init_weight(num_embeddings, embedding_dim, _weight, not _freeze, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        s += self._lookup_repr()
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, sparse: bool = False) -> Embedding:
        """An Embedding whose weight is ``embeddings`` (2-D); frozen unless ``freeze=False``."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, _weight=embeddings, _freeze=freeze, padding_idx=padding_idx,
                   max_norm=max_norm, norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq,
                   sparse=sparse)


class EmbeddingBag(_EmbeddingTable):
    """Sum, mean or max of the ``weight`` rows of each bag of indices (``F.embedding_bag``).

    Args:
        num_embeddings: table size.
        embedding_dim: vector size.
        max_norm: rows looked up are first renormalised in place to at most this norm.
        norm_type: the p of the norm for ``max_norm``. Default 2.
        scale_grad_by_freq: divide each row's gradient by its count in the batch (not with ``'max'``).
        mode: ``'sum'``, ``'mean'`` (default) or ``'max'``.
        sparse: accepted for compatibility; gradients are dense.
        _weight: use this tensor as the weight instead of drawing one.
        include_last_offset: ``offsets`` carries the end of the last bag as an extra last entry.
        padding_idx: an index left out of every bag; its row starts at zero and never receives a
            gradient (negative counts from the end).

    Attributes:
        weight: ``(num_embeddings, embedding_dim)``, from N(0, 1).

    Raises:
        AssertionError: ``padding_idx`` outside the table, or ``_weight`` of the wrong shape.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight: Tensor | None = None, include_last_offset: bool = False,
                 padding_idx: int | None = None, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("padding_idx must be within num_embeddings")
            padding_idx = padding_idx % num_embeddings
        self.padding_idx = padding_idx
        self._init_weight(num_embeddings, embedding_dim, _weight, True, device, dtype)
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    def forward(self, input: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None) -> Tensor:
        """``(B, embedding_dim)`` for a ``(B, N)`` input, or a 1-D input cut into bags at ``offsets``."""
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse, per_sample_weights,
                               self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}{self._lookup_repr()}, mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                        sparse: bool = False, include_last_offset: bool = False,
                        padding_idx: int | None = None) -> EmbeddingBag:
        """An EmbeddingBag whose weight is ``embeddings`` (2-D); frozen unless ``freeze=False``."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(rows, cols, _weight=embeddings, max_norm=max_norm, norm_type=norm_type,
                  scale_grad_by_freq=scale_grad_by_freq, mode=mode, sparse=sparse,
                  include_last_offset=include_last_offset, padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag
