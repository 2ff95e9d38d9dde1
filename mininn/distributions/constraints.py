"""Constraints: which values a distribution's parameters and samples may take.

Each constraint's ``check(value)`` returns a bool tensor (True where the value
is allowed) and its ``repr`` is torch's (``GreaterThan(lower_bound=0.0)``), as
the validation messages print it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mininn.tensor import Tensor

__all__ = [
    "Constraint",
    "boolean",
    "greater_than",
    "integer_interval",
    "interval",
    "less_than",
    "positive",
    "real",
    "simplex",
    "unit_interval",
]


def _raw(x: Any) -> Any:
    return x._data if isinstance(x, Tensor) else x


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
        return Tensor(np.asarray(inside & (np.mod(v, 1) == 0)))


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


real = Real()
positive = GreaterThan(0.0)
unit_interval = Interval(0.0, 1.0)
boolean = Boolean()
simplex = Simplex()
greater_than = GreaterThan
less_than = LessThan
interval = Interval
integer_interval = IntegerInterval
