"""Constraints: which values a distribution's parameters and samples may take.

Each constraint's ``check(value)`` returns a bool tensor (True where the value
is allowed) and its ``repr`` is torch's (``GreaterThan(lower_bound=0.0)``), as
the validation messages print it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mininn.tensor import Tensor

__all__ = [
    "Constraint",
    "MixtureSameFamilyConstraint",
    "boolean",
    "dependent",
    "dependent_property",
    "greater_than",
    "greater_than_eq",
    "half_open_interval",
    "independent",
    "integer_interval",
    "interval",
    "is_dependent",
    "less_than",
    "lower_cholesky",
    "lower_triangular",
    "multinomial",
    "nonnegative",
    "nonnegative_integer",
    "one_hot",
    "positive",
    "positive_definite",
    "positive_integer",
    "positive_semidefinite",
    "real",
    "real_vector",
    "simplex",
    "square",
    "symmetric",
    "unit_interval",
]


def _raw(x: Any) -> Any:
    return x._data if isinstance(x, Tensor) else x


def _whole(v: Any) -> Any:
    """Where ``v`` is a whole number (``v % 1 == 0``; inf and NaN are not)."""
    with np.errstate(invalid="ignore"):
        return np.mod(v, 1) == 0


class Constraint:
    """A set of allowed values; ``event_dim`` dims on the right are checked together."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def _bounds(self) -> str:
        return ""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._bounds()})"


class Dependent(Constraint):
    """A placeholder for a constraint that depends on other parameters (a custom ``support``, a
    parameter checked elsewhere); ``check`` cannot decide and raises."""

    def __init__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> None:
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> Dependent:
        """``dependent(is_discrete=True, event_dim=1)``: the same placeholder with static attributes."""
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, value: Tensor) -> Tensor:
        raise ValueError("Cannot determine validity of dependent constraint")


class DependentProperty(property, Dependent):
    """``@dependent_property`` on a distribution's ``support``: a property on instances, a
    ``Dependent`` constraint on the class."""

    def __init__(self, fn: Callable[..., Any] | None = None, *, is_discrete: Any = NotImplemented,
                 event_dim: Any = NotImplemented) -> None:
        property.__init__(self, fn)
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    def __call__(self, fn: Callable[..., Any]) -> DependentProperty:  # type: ignore[override]
        """``@dependent_property(is_discrete=..., event_dim=...)`` applied to the method."""
        return DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


def is_dependent(constraint: Any) -> bool:
    """Whether ``constraint`` is a ``dependent`` placeholder (validation skips those)."""
    return isinstance(constraint, Dependent)


class Real(Constraint):
    def check(self, value: Tensor) -> Tensor:
        v = _raw(value)
        return Tensor(np.asarray(v == v))  # False only for NaN


class GreaterThan(Constraint):
    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return Tensor(np.asarray(_raw(self.lower_bound) < _raw(value)))

    def _bounds(self) -> str:
        return f"lower_bound={self.lower_bound}"


class LessThan(Constraint):
    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return Tensor(np.asarray(_raw(value) < _raw(self.upper_bound)))

    def _bounds(self) -> str:
        return f"upper_bound={self.upper_bound}"


class Interval(Constraint):
    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        v = _raw(value)
        return Tensor(np.asarray((_raw(self.lower_bound) <= v) & (v <= _raw(self.upper_bound))))

    def _bounds(self) -> str:
        return f"lower_bound={self.lower_bound}, upper_bound={self.upper_bound}"


class IntegerInterval(Interval):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        v = _raw(value)
        inside = super().check(value)._data
        return Tensor(np.asarray(inside & _whole(v)))


class Boolean(Constraint):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        v = _raw(value)
        return Tensor(np.asarray((v == 0) | (v == 1)))


class Simplex(Constraint):
    """Non-negative vectors (the last dim) that sum to 1."""

    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        v = _raw(value)
        return Tensor(np.asarray(np.all(v >= 0, axis=-1) & (np.abs(v.sum(-1) - 1) < 1e-6)))


class GreaterThanEq(GreaterThan):
    def check(self, value: Tensor) -> Tensor:
        return Tensor(np.asarray(_raw(self.lower_bound) <= _raw(value)))


class HalfOpenInterval(Interval):
    def check(self, value: Tensor) -> Tensor:
        v = _raw(value)
        return Tensor(np.asarray((_raw(self.lower_bound) <= v) & (v < _raw(self.upper_bound))))


class IntegerGreaterThan(GreaterThan):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        v = _raw(value)
        return Tensor(np.asarray(_whole(v) & (v >= _raw(self.lower_bound))))


class IndependentConstraint(Constraint):
    """``base`` checked on values whose rightmost ``reinterpreted_batch_ndims`` more dims are one event."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        result = np.asarray(self.base_constraint.check(value)._data)
        n = self.reinterpreted_batch_ndims
        if result.ndim < n:
            expected = self.base_constraint.event_dim + n
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
        return Tensor(np.asarray(result.reshape(result.shape[:result.ndim - n] + (-1,)).all(-1)))

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class PositiveDefinite(Constraint):
    """Symmetric matrices (the last two dims) with a Cholesky factor."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        v = np.asarray(_raw(value))
        symmetric = np.isclose(v, np.swapaxes(v, -1, -2), atol=1e-6).reshape(v.shape[:-2] + (-1,)).all(-1)
        if not symmetric.all():
            return Tensor(np.asarray(symmetric))
        return Tensor(np.asarray(np.linalg.eigvalsh(v).min(-1) > 0))


class LowerCholesky(Constraint):
    """Lower-triangular square matrices with a positive diagonal."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        v = np.asarray(_raw(value))
        lower = (np.tril(v) == v).reshape(v.shape[:-2] + (-1,)).all(-1)
        return Tensor(np.asarray(lower & (np.diagonal(v, axis1=-2, axis2=-1) > 0).all(-1)))


class Multinomial(Constraint):
    """Non-negative integer counts (the last dim) summing to at most ``upper_bound``."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        v = np.asarray(_raw(value))
        return Tensor(np.asarray((v >= 0).all(-1) & (v.sum(-1) <= _raw(self.upper_bound))))


class Square(Constraint):
    """Square matrices (the last two dims)."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        v = np.asarray(_raw(value))
        return Tensor(np.full(v.shape[:-2], v.shape[-2] == v.shape[-1]))


class Symmetric(Square):
    """Square matrices equal to their transpose (within 1e-6)."""

    def check(self, value: Tensor) -> Tensor:
        square = super().check(value)
        if not bool(square.all()):
            return square
        v = np.asarray(_raw(value))
        return Tensor(np.asarray(np.isclose(v, np.swapaxes(v, -1, -2), atol=1e-6).all((-2, -1))))


class PositiveSemidefinite(Symmetric):
    """Symmetric matrices whose eigenvalues are all non-negative."""

    def check(self, value: Tensor) -> Tensor:
        symmetric = super().check(value)
        if not bool(symmetric.all()):
            return symmetric
        return Tensor(np.asarray(np.linalg.eigvalsh(np.asarray(_raw(value))).min(-1) >= 0))


class LowerTriangular(Constraint):
    """Square matrices with zeros above the diagonal."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        v = np.asarray(_raw(value))
        return Tensor(np.asarray((np.tril(v) == v).reshape(v.shape[:-2] + (-1,)).all(-1)))


class MixtureSameFamilyConstraint(Constraint):
    """A value is allowed when every component's support holds it."""

    def __init__(self, base_constraint: Constraint) -> None:
        self.base_constraint = base_constraint

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim

    def check(self, value: Tensor) -> Tensor:
        result = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        if value.dim() < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        keep = value.dim() - self.event_dim
        return result.reshape(tuple(result.shape[:keep]) + (-1,)).all(-1)

    def __repr__(self) -> str:
        return f"MixtureSameFamilyConstraint({self.base_constraint!r})"


class OneHot(Constraint):
    """Vectors of 0s and 1s (the last dim) with exactly one 1."""

    is_discrete = True
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        v = np.asarray(_raw(value))
        return Tensor(np.asarray(((v == 0) | (v == 1)).all(-1) & (v.sum(-1) == 1)))


dependent = Dependent()
dependent_property = DependentProperty
real = Real()
positive = GreaterThan(0.0)
unit_interval = Interval(0.0, 1.0)
boolean = Boolean()
simplex = Simplex()
greater_than = GreaterThan
less_than = LessThan
interval = Interval
integer_interval = IntegerInterval
greater_than_eq = GreaterThanEq
half_open_interval = HalfOpenInterval
nonnegative = GreaterThanEq(0.0)
nonnegative_integer = IntegerGreaterThan(0)
positive_integer = IntegerGreaterThan(1)
independent = IndependentConstraint
real_vector = IndependentConstraint(real, 1)
positive_definite = PositiveDefinite()
lower_cholesky = LowerCholesky()
multinomial = Multinomial
one_hot = OneHot()
square = Square()
symmetric = Symmetric()
positive_semidefinite = PositiveSemidefinite()
lower_triangular = LowerTriangular()
