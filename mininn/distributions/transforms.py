"""Elementwise transforms for ``TransformedDistribution``: ``ExpTransform``, ``AbsTransform``,
``AffineTransform``, ``PowerTransform``, ``SigmoidTransform``, ``SoftplusTransform``,
``TanhTransform`` and their ``ComposeTransform`` (torch's names, maps, inverses, log-Jacobians and
``cache_size=1`` caching).

Each maps ``x`` in ``domain`` to ``y = t(x)`` in ``codomain``; ``t.inv(y)`` goes back and
``t.log_abs_det_jacobian(x, y)`` is ``log |dy/dx|`` elementwise. Only transforms whose events are
scalars (``event_dim`` 0 on both sides) are here.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import mininn
from mininn.distributions import constraints
from mininn.distributions.utils import broadcast_all
from mininn.tensor import Tensor

__all__ = [
    "AbsTransform", "AffineTransform", "ComposeTransform", "ExpTransform", "PowerTransform",
    "SigmoidTransform", "SoftplusTransform", "TanhTransform", "Transform", "identity_transform",
]


class Transform:
    """An invertible (or, for ``AbsTransform``, many-to-one) map between two constraints' sets."""

    domain: constraints.Constraint = constraints.real
    codomain: constraints.Constraint = constraints.real
    bijective = True
    sign: Any = 1
    _cache_size = 0
    _cached_x_y: tuple[Any, Any] = (None, None)

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached_x_y = (None, None)

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform remembering its last ``(x, y)`` pair (``cache_size=1``) or not (0)."""
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is not Transform.__init__:
            raise NotImplementedError(f"{type(self)}.with_cache is not implemented")
        return type(self)(cache_size=cache_size)

    @property
    def event_dim(self) -> int:
        return max(self.domain.event_dim, self.codomain.event_dim)

    @property
    def inv(self) -> _Inverse:
        """The inverse map: ``t.inv(y)``."""
        return _Inverse(self)

    def __call__(self, x: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        """``x`` for ``y``: the cached ``x`` when ``y`` is the last output (``cache_size=1``)."""
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

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
        return self._inv._inv_call(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._inv.log_abs_det_jacobian(y, x)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Inverse) and self._inv == other._inv

    __hash__ = object.__hash__

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

    def __init__(self, loc: Any, scale: Any, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        if event_dim != 0:
            raise NotImplementedError("mininn's AffineTransform supports event_dim=0 only")
        self.loc, self.scale = loc, scale

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform remembering its last ``(x, y)`` pair (``cache_size=1``) or not (0)."""
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, 0, cache_size)

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


class TanhTransform(Transform):
    """``y = tanh(x)`` (squashed Gaussian policies); ``cache_size=1`` keeps ``x`` for ``y`` near +-1."""

    codomain = constraints.interval(-1.0, 1.0)

    def _call(self, x: Tensor) -> Tensor:
        return x.tanh()

    def _inverse(self, y: Tensor) -> Tensor:
        return mininn.atanh(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return 2.0 * (math.log(2.0) - x - mininn.nn.functional.softplus(-2.0 * x))


class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))``."""

    codomain = constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return mininn.nn.functional.softplus(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -mininn.nn.functional.softplus(-x)


class ComposeTransform(Transform):
    """``parts`` applied in order (elementwise ones); the empty composition is ``identity_transform``."""

    def __init__(self, parts: list[Transform], cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)
        if self.parts:
            self.domain, self.codomain = self.parts[0].domain, self.parts[-1].codomain
        self.bijective = all(p.bijective for p in self.parts)

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
        total = self.parts[0].log_abs_det_jacobian(xs[0], xs[1])
        for part, a, b in zip(self.parts[1:], xs[1:-1], xs[2:]):
            total = total + part.log_abs_det_jacobian(a, b)
        return total

    def __repr__(self) -> str:
        return "ComposeTransform(\n    " + ",\n    ".join(repr(p) for p in self.parts) + "\n)"


identity_transform = ComposeTransform([])
