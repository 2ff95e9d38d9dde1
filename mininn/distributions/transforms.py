"""``torch.distributions.transforms``: the elementwise transforms ``ExpTransform``,
``AbsTransform``, ``AffineTransform``, ``PowerTransform``, ``SigmoidTransform``,
``SoftplusTransform``, ``TanhTransform`` and their ``ComposeTransform`` (torch's names, maps,
inverses, log-Jacobians and ``cache_size=1`` caching), with the vector ones of
``vector_transforms.py`` re-exported under torch's module name.

Each maps ``x`` in ``domain`` to ``y = t(x)`` in ``codomain``; ``t.inv(y)`` goes back and
``t.log_abs_det_jacobian(x, y)`` is ``log |dy/dx|`` elementwise.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import mininn
from mininn.distributions import constraints
from mininn.distributions.independent import sum_rightmost
from mininn.distributions.transform import Transform
from mininn.distributions.utils import broadcast_all
from mininn.distributions.vector_transforms import (
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    SoftmaxTransform,
    StickBreakingTransform,
)
from mininn.tensor import Tensor

__all__ = [
    "AbsTransform", "AffineTransform", "ComposeTransform", "ExpTransform", "IndependentTransform",
    "LowerCholeskyTransform", "PositiveDefiniteTransform", "PowerTransform", "SigmoidTransform",
    "SoftmaxTransform", "SoftplusTransform", "StickBreakingTransform", "TanhTransform", "Transform",
    "identity_transform",
]


def _widened(constraint: constraints.Constraint, event_dim: int) -> constraints.Constraint:
    """``constraint`` over ``event_dim`` rightmost dims (wrapped in ``independent`` when it has fewer)."""
    if event_dim > constraint.event_dim:
        return constraints.independent(constraint, event_dim - constraint.event_dim)
    return constraint


def _broadcast_shape(shape: Any, *params: Any) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(tuple(shape), *(tuple(getattr(p, "shape", ())) for p in params)))


class ExpTransform(Transform):
    """``y = exp(x)``."""

    bijective = True

    codomain = constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return x.exp()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


class AbsTransform(Transform):
    """``y = |x|``; its "inverse" returns ``y`` (one of the two preimages), as torch's does."""

    codomain = constraints.positive
    bijective = False

    def _call(self, x: Tensor) -> Tensor:
        return x.abs()

    def _inverse(self, y: Tensor) -> Tensor:
        return y


class AffineTransform(Transform):
    """``y = loc + scale * x`` elementwise."""

    bijective = True

    def __init__(self, loc: Any, scale: Any, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc, self.scale = loc, scale
        self._event_dim = event_dim

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return _widened(constraints.real, self._event_dim)

    codomain = domain

    def forward_shape(self, shape: Any) -> Any:
        return _broadcast_shape(shape, self.loc, self.scale)

    inverse_shape = forward_shape

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform remembering its last ``(x, y)`` pair (``cache_size=1``) or not (0)."""
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size)

    @property
    def sign(self) -> Any:  # type: ignore[override]
        if isinstance(self.scale, (int, float)):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AffineTransform):
            return False
        return all(bool((mininn.as_tensor(a) == mininn.as_tensor(b)).all())
                   for a, b in ((self.loc, other.loc), (self.scale, other.scale)))

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if isinstance(self.scale, (int, float)):
            result = mininn.full_like(x, float(np.log(abs(self.scale))))
        else:
            result = self.scale.abs().log().expand(x.shape)
        return sum_rightmost(result, self._event_dim)


class SigmoidTransform(Transform):
    """``y = sigmoid(x)``, kept inside (0, 1): at least the smallest normal number, at most 1 - eps."""

    bijective = True

    codomain = constraints.unit_interval

    def _call(self, x: Tensor) -> Tensor:
        info = np.finfo(x._data.dtype)
        return mininn.sigmoid(x).clamp(min=float(info.tiny), max=float(1 - info.eps))

    def _inverse(self, y: Tensor) -> Tensor:
        info = np.finfo(y._data.dtype)
        y = y.clamp(min=float(info.tiny), max=float(1 - info.eps))
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -mininn.nn.functional.softplus(-x) - mininn.nn.functional.softplus(x)


class PowerTransform(Transform):
    """``y = x ** exponent`` on positive numbers."""

    bijective = True

    domain = constraints.positive
    codomain = constraints.positive

    def __init__(self, exponent: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform remembering its last ``(x, y)`` pair (``cache_size=1``) or not (0)."""
        return self if self._cache_size == cache_size else PowerTransform(self.exponent, cache_size)

    @property
    def sign(self) -> Any:  # type: ignore[override]
        return self.exponent.sign()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PowerTransform) and bool((self.exponent == other.exponent).all())

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.pow(self.exponent)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape: Any) -> Any:
        return _broadcast_shape(shape, self.exponent)

    inverse_shape = forward_shape


class TanhTransform(Transform):
    """``y = tanh(x)`` (squashed Gaussian policies); ``cache_size=1`` keeps ``x`` for ``y`` near +-1."""

    bijective = True

    codomain = constraints.interval(-1.0, 1.0)

    def _call(self, x: Tensor) -> Tensor:
        return x.tanh()

    def _inverse(self, y: Tensor) -> Tensor:
        return mininn.atanh(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return 2.0 * (math.log(2.0) - x - mininn.nn.functional.softplus(-2.0 * x))


class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))``."""

    bijective = True

    codomain = constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return mininn.nn.functional.softplus(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -mininn.nn.functional.softplus(-x)


class ComposeTransform(Transform):
    """``parts`` applied in order; the empty composition is ``identity_transform``. Its domain and
    codomain hold as many event dims as the parts need together."""

    def __init__(self, parts: list[Transform], cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)
        self.bijective = all(p.bijective for p in self.parts)

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        if not self.parts:
            return constraints.real
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        return _widened(self.parts[0].domain, event_dim)

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        if not self.parts:
            return constraints.real
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        return _widened(self.parts[-1].codomain, event_dim)

    def forward_shape(self, shape: Any) -> Any:
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape: Any) -> Any:
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    @property
    def sign(self) -> Any:  # type: ignore[override]
        sign: Any = 1
        for part in self.parts:
            sign = sign * part.sign
        return sign

    @property
    def inv(self) -> Transform:  # type: ignore[override]
        return ComposeTransform([p.inv for p in reversed(self.parts)])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if not self.parts:
            return mininn.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        total: Any = 0
        event_dim = self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            total = total + sum_rightmost(part.log_abs_det_jacobian(a, b), event_dim - part.domain.event_dim)
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return total

    def __repr__(self) -> str:
        return "ComposeTransform(\n    " + ",\n    ".join(repr(p) for p in self.parts) + "\n)"


identity_transform = ComposeTransform([])
