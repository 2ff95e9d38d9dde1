"""``LowRankMultivariateNormal(loc, cov_factor, cov_diag)``: a Gaussian over vectors whose covariance
is ``W @ W.T + diag(D)`` (``W`` n x m, m small), evaluated through the m x m capacitance matrix
``I + W.T D^-1 W`` (Woodbury) rather than the n x n covariance."""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any, ClassVar

import mininn
from mininn.distributions import constraints
from mininn.distributions.distribution import Distribution
from mininn.distributions.multivariate_normal import batch_mahalanobis, batch_mv
from mininn.tensor import Size, Tensor

__all__ = ["LowRankMultivariateNormal", "lowrank_logdet", "lowrank_mahalanobis"]


def _plus_identity(k: Tensor) -> Tensor:
    return k + mininn.eye(k.shape[-1], dtype=k.dtype)


def capacitance_tril(w: Tensor, d: Tensor) -> Tensor:
    """The Cholesky factor of ``I + W.T D^-1 W``."""
    wt_dinv = w.mT / d.unsqueeze(-2)
    return mininn.linalg.cholesky(_plus_identity(mininn.matmul(wt_dinv, w)))


def lowrank_logdet(w: Tensor, d: Tensor, cap_tril: Tensor) -> Tensor:
    """``log det(W W.T + D)`` by the matrix determinant lemma."""
    return 2 * cap_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + d.log().sum(-1)


def lowrank_mahalanobis(w: Tensor, d: Tensor, x: Tensor, cap_tril: Tensor) -> Tensor:
    """``x.T (W W.T + D)^-1 x`` by the Woodbury identity."""
    wt_dinv_x = batch_mv(w.mT / d.unsqueeze(-2), x)
    return (x.pow(2) / d).sum(-1) - batch_mahalanobis(cap_tril, wt_dinv_x)


class LowRankMultivariateNormal(Distribution):
    """Mean ``loc`` (n), covariance ``cov_factor @ cov_factor.T + diag(cov_diag)`` with ``cov_factor``
    n x m and ``cov_diag`` positive (n); batch dims broadcast (reparameterisable)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, cov_factor: Tensor, cov_diag: Tensor,
                 validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = Size(loc.shape[-1:])  # mininn.Size slices are tuples; torch prints a Size
        if cov_factor.dim() < 2:
            raise ValueError(
                "cov_factor must be at least two-dimensional, with optional leading batch dimensions"
            )
        if cov_factor.shape[-2:-1] != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if cov_diag.shape[-1:] != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, self.cov_factor, cov_diag_ = mininn.broadcast_tensors(
                loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                             f"cov_diag {cov_diag.shape}") from e
        self.loc, self.cov_diag = loc_[..., 0], cov_diag_[..., 0]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = capacitance_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> LowRankMultivariateNormal:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        return self._expanded(batch_shape, {"loc": 1, "cov_diag": 1, "cov_factor": 2},
                              _unbroadcasted_cov_factor=self._unbroadcasted_cov_factor,
                              _unbroadcasted_cov_diag=self._unbroadcasted_cov_diag,
                              _capacitance_tril=self._capacitance_tril)

    def _matrix_shape(self) -> tuple[int, ...]:
        return tuple(self._batch_shape + self._event_shape + self._event_shape)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @cached_property
    def variance(self) -> Tensor:  # type: ignore[override]
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (w.pow(2).sum(-1) + d).expand(tuple(self._batch_shape + self._event_shape))

    @cached_property
    def scale_tril(self) -> Tensor:
        d_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        scaled = self._unbroadcasted_cov_factor / d_sqrt
        k = _plus_identity(mininn.matmul(scaled, scaled.mT))
        return (d_sqrt * mininn.linalg.cholesky(k)).expand(self._matrix_shape())

    @cached_property
    def covariance_matrix(self) -> Tensor:
        w = self._unbroadcasted_cov_factor
        cov = mininn.matmul(w, w.mT) + mininn.diag_embed(self._unbroadcasted_cov_diag)
        return cov.expand(self._matrix_shape())

    @cached_property
    def precision_matrix(self) -> Tensor:
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        a = mininn.linalg.solve_triangular(self._capacitance_tril, w.mT / d.unsqueeze(-2), upper=False)
        precision = mininn.diag_embed(d.reciprocal()) - mininn.matmul(a.mT, a)
        return precision.expand(self._matrix_shape())

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        w = self._unbroadcasted_cov_factor
        eps_w = mininn.randn(tuple(shape[:-1]) + (w.shape[-1],), dtype=self.loc.dtype)
        eps_d = mininn.randn(tuple(shape), dtype=self.loc.dtype)
        return self.loc + batch_mv(w, eps_w) + self._unbroadcasted_cov_diag.sqrt() * eps_d

    def _logdet(self) -> Tensor:
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return lowrank_logdet(w, d, self._capacitance_tril)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        m = lowrank_mahalanobis(w, d, value - self.loc, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._logdet() + m)

    def entropy(self) -> Tensor:
        h = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._logdet())
        return h if len(self._batch_shape) == 0 else h.expand(tuple(self._batch_shape))


