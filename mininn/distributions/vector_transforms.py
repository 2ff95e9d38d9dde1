"""Transforms whose events are vectors or matrices: ``SoftmaxTransform`` and
``StickBreakingTransform`` (onto the simplex), ``LowerCholeskyTransform`` and
``PositiveDefiniteTransform`` (onto Cholesky factors and covariance matrices), and
``IndependentTransform`` (a transform whose log-Jacobian sums over more rightmost dims).

They are used standalone and by ``biject_to``/``transform_to``; ``TransformedDistribution``
takes elementwise transforms only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import mininn
from mininn.distributions import constraints
from mininn.distributions.independent import sum_rightmost
from mininn.distributions.transform import Transform
from mininn.tensor import Tensor

__all__ = [
    "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform", "SoftmaxTransform",
    "StickBreakingTransform",
]


def _stick_offsets(x: Tensor, length: int) -> Tensor:
    """``length, length - 1, ..., 1``: how many pieces remain before each break."""
    return mininn.arange(length, 0, -1, dtype=x.dtype)


class SoftmaxTransform(Transform):
    """``y = softmax(x)`` over the last dim; not bijective (its inverse is ``log``)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x: Tensor) -> Tensor:
        probs = (x - x.max(-1, True)[0]).exp()
        return probs / probs.sum(-1, True)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()


class StickBreakingTransform(Transform):
    """``K - 1`` unconstrained numbers to a point of the ``K``-simplex by breaking a stick: each
    sigmoid takes its share of what is left (bijective)."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _call(self, x: Tensor) -> Tensor:
        offset = _stick_offsets(x, x.shape[-1])
        info = np.finfo(x._data.dtype)
        z = mininn.sigmoid(x - offset.log()).clamp(min=float(info.tiny), max=float(1 - info.eps))
        z_cumprod = (1 - z).cumprod(-1)
        pad = mininn.nn.functional.pad
        return pad(z, [0, 1], value=1) * pad(z_cumprod, [1, 0], value=1)

    def _inverse(self, y: Tensor) -> Tensor:
        y_crop = y[..., :-1]
        offset = _stick_offsets(y, y_crop.shape[-1])
        remaining = (1 - y_crop.cumsum(-1)).clamp(min=float(np.finfo(y._data.dtype).tiny))
        return y_crop.log() - remaining.log() + offset.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        x = x - _stick_offsets(x, x.shape[-1]).log()
        return (-x + mininn.nn.functional.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape: Any) -> Any:
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape: Any) -> Any:
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(Transform):
    """A square matrix to a Cholesky factor: the strict lower triangle kept, the diagonal exponentiated."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x: Tensor) -> Tensor:
        return x.tril(-1) + mininn.diag_embed(x.diagonal(dim1=-2, dim2=-1).exp())

    def _inverse(self, y: Tensor) -> Tensor:
        return y.tril(-1) + mininn.diag_embed(y.diagonal(dim1=-2, dim2=-1).log())


class PositiveDefiniteTransform(Transform):
    """A square matrix to ``L @ L.T`` with ``L`` its ``LowerCholeskyTransform``."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x: Tensor) -> Tensor:
        lower = LowerCholeskyTransform()(x)
        return lower @ lower.mT

    def _inverse(self, y: Tensor) -> Tensor:
        return LowerCholeskyTransform().inv(mininn.linalg.cholesky(y))


class IndependentTransform(Transform):
    """``base_transform`` with ``reinterpreted_batch_ndims`` more rightmost dims in each event."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int,
                 cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform remembering its last ``(x, y)`` pair (``cache_size=1``) or not (0)."""
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims, cache_size)

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self.base_transform.bijective

    @property
    def sign(self) -> Any:  # type: ignore[override]
        return self.base_transform.sign

    def _call(self, x: Tensor) -> Tensor:
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y: Tensor) -> Tensor:
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, IndependentTransform) and self.base_transform == other.base_transform
                and self.reinterpreted_batch_ndims == other.reinterpreted_batch_ndims)

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"
