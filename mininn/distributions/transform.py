"""``Transform``: the base of the transforms (a map with its inverse, log-Jacobian, domain and
codomain, and torch's one-pair cache), and the inverse view ``t.inv`` every transform has."""

from __future__ import annotations

from typing import Any

from mininn.distributions import constraints
from mininn.tensor import Tensor

__all__ = ["Transform"]


class Transform:
    """An invertible (or, for ``AbsTransform``, many-to-one) map between two constraints' sets."""

    domain: constraints.Constraint = constraints.real
    codomain: constraints.Constraint = constraints.real
    bijective = False  # torch's default; the invertible transforms say so
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

    def forward_shape(self, shape: Any) -> Any:
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape: Any) -> Any:
        return self._inv.forward_shape(shape)

    def __repr__(self) -> str:
        return f"_InverseTransform({self._inv!r})"
