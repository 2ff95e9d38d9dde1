"""Elementwise transforms for ``TransformedDistribution``: ``ExpTransform``, ``AbsTransform``,
``AffineTransform``, ``PowerTransform`` and ``SigmoidTransform`` (torch's names, maps, inverses
and log-Jacobians).

Each maps ``x`` in ``domain`` to ``y = t(x)`` in ``codomain``; ``t.inv(y)`` goes back and
``t.log_abs_det_jacobian(x, y)`` is ``log |dy/dx|`` elementwise. Only transforms whose events are
scalars (``event_dim`` 0 on both sides) are here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import mininn
from mininn.distributions import constraints
from mininn.distributions.utils import broadcast_all
from mininn.tensor import Tensor

__all__ = [
    "AbsTransform", "AffineTransform", "ExpTransform", "PowerTransform", "SigmoidTransform", "Transform",
]


class Transform:
    """An invertible (or, for ``AbsTransform``, many-to-one) map between two constraints' sets."""

    domain: constraints.Constraint = constraints.real
    codomain: constraints.Constraint = constraints.real
    bijective = True
    sign: Any = 1

    @property
    def event_dim(self) -> int:
        return max(self.domain.event_dim, self.codomain.event_dim)

    @property
    def inv(self) -> _Inverse:
        """The inverse map: ``t.inv(y)``."""
        return _Inverse(self)

    def __call__(self, x: Tensor) -> Tensor:
        return self._call(x)

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """``log |dy/dx|`` at ``x`` (with ``y = t(x)``)."""
        raise NotImplementedError

    def forward_shape(self, shape: Any) -> Any:
        return shape

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)  # the parameterless transforms; AffineTransform compares more

    __hash__ = object.__hash__

    def inverse_shape(self, shape: Any) -> Any:
        return shape

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class _Inverse(Transform):
    def __init__(self, transform: Transform) -> None:
        self._inv = transform
        self.domain, self.codomain = transform.codomain, transform.domain
        self.bijective = transform.bijective

    @property
    def sign(self) -> Any:  # type: ignore[override]
        return self._inv.sign

    @property
    def inv(self) -> Transform:  # type: ignore[override]
        return self._inv

    def __call__(self, y: Tensor) -> Tensor:
        return self._inv._inverse(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._inv.log_abs_det_jacobian(y, x)

    def __repr__(self) -> str:
        return f"_InverseTransform({self._inv!r})"


class ExpTransform(Transform):
    """``y = exp(x)``."""

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

    def __init__(self, loc: Any, scale: Any, event_dim: int = 0) -> None:
        if event_dim != 0:
            raise NotImplementedError("mininn's AffineTransform supports event_dim=0 only")
        self.loc, self.scale = loc, scale

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
            return mininn.full_like(x, float(np.log(abs(self.scale))))
        return self.scale.abs().log().expand(x.shape)


class SigmoidTransform(Transform):
    """``y = sigmoid(x)``, kept inside (0, 1): at least the smallest normal number, at most 1 - eps."""

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

    domain = constraints.positive
    codomain = constraints.positive

    def __init__(self, exponent: Any) -> None:
        (self.exponent,) = broadcast_all(exponent)

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
