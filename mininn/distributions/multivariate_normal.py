"""``MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril)``: the Gaussian over
vectors, held as the Cholesky factor ``L`` of its covariance (``covariance = L @ L.T``)."""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

import mininn
from mininn.distributions import constraints
from mininn.distributions.distribution import Distribution
from mininn.tensor import Size, Tensor

__all__ = ["MultivariateNormal"]

_MATRIX_DIMS = "must be at least two-dimensional, with optional leading batch dimensions"


def batch_mv(bmat: Tensor, bvec: Tensor) -> Tensor:
    """Matrix-vector products over broadcast batches: ``bmat @ bvec[..., None]``, squeezed."""
    return mininn.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def batch_mahalanobis(bl: Tensor, bx: Tensor) -> Tensor:
    """``x^T (L L^T)^-1 x`` for lower-triangular ``L`` over broadcast batches (shaped ``bx[..., 0]``)."""
    shape = tuple(np.broadcast_shapes(tuple(bl.shape[:-2]), tuple(bx.shape[:-1])))
    n = bx.shape[-1]
    bl = bl.expand(shape + (n, n))
    bx = bx.expand(shape + (n,)).unsqueeze(-1)
    return mininn.linalg.solve_triangular(bl, bx, upper=False).squeeze(-1).pow(2).sum(-1)


def precision_to_scale_tril(p: Tensor) -> Tensor:
    """The lower Cholesky factor of ``inverse(p)``, without forming the inverse."""
    lf = mininn.linalg.cholesky(mininn.flip(p, (-2, -1)))
    l_inv = mininn.transpose(mininn.flip(lf, (-2, -1)), -2, -1)
    eye = mininn.eye(p.shape[-1], dtype=p.dtype)
    return mininn.linalg.solve_triangular(l_inv, eye, upper=False)


class MultivariateNormal(Distribution):
    """Mean ``loc`` (last dim the event) and exactly one of ``covariance_matrix``, ``precision_matrix``
    or ``scale_tril`` (lower-triangular, positive diagonal); batch dims broadcast (reparameterisable)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = {"scale_tril": scale_tril, "covariance_matrix": covariance_matrix,
                 "precision_matrix": precision_matrix}
        if sum(v is not None for v in given.values()) != 1:
            raise ValueError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified."
            )
        name, matrix = next((k, v) for k, v in given.items() if v is not None)
        if matrix.dim() < 2:
            raise ValueError(f"{'scale_tril matrix' if name == 'scale_tril' else name} {_MATRIX_DIMS}")
        batch = Size(np.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1])))
        self.__dict__[name] = matrix.expand(tuple(batch) + (-1, -1))
        self.loc = loc.expand(tuple(batch) + (-1,))
        super().__init__(batch, loc.shape[-1:], validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = mininn.linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = precision_to_scale_tril(matrix)

    def expand(self, batch_shape: Any, _instance: Any = None) -> MultivariateNormal:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        return self._expanded(batch_shape, {"loc": 1, "covariance_matrix": 2, "scale_tril": 2,
                                            "precision_matrix": 2},
                              _unbroadcasted_scale_tril=self._unbroadcasted_scale_tril)

    def _matrix_shape(self) -> tuple[int, ...]:
        return tuple(self._batch_shape + self._event_shape + self._event_shape)

    @cached_property
    def scale_tril(self) -> Tensor:  # noqa: F811 - computed on first use unless given
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @cached_property
    def covariance_matrix(self) -> Tensor:  # noqa: F811
        lower = self._unbroadcasted_scale_tril
        return mininn.matmul(lower, lower.mT).expand(self._matrix_shape())

    @cached_property
    def precision_matrix(self) -> Tensor:  # noqa: F811
        return mininn.cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        variance = self._unbroadcasted_scale_tril.pow(2).sum(-1)
        return variance.expand(tuple(self._batch_shape + self._event_shape))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        eps = mininn.randn(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self) -> Tensor:
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self) -> Tensor:
        h = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h if len(self._batch_shape) == 0 else h.expand(tuple(self._batch_shape))
