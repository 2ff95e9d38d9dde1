"""``biject_to(constraint)`` and ``transform_to(constraint)``: the transform from unconstrained
numbers onto a constraint's set, as torch's registries choose it (``biject_to`` bijective, for
densities; ``transform_to`` may be cheaper, for optimisation), and ``ConstraintRegistry`` to
register more."""

from __future__ import annotations

from collections.abc import Callable
from numbers import Number
from typing import Any

from mininn.distributions import constraints as C
from mininn.distributions.transforms import (
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    SigmoidTransform,
    Transform,
    identity_transform,
)
from mininn.distributions.vector_transforms import (
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    SoftmaxTransform,
    StickBreakingTransform,
)

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]

_Factory = Callable[[Any], Transform]


class ConstraintRegistry:
    """Constraint class -> factory of the transform onto its set."""

    def __init__(self) -> None:
        self._registry: dict[type, _Factory] = {}

    def register(self, constraint: Any, factory: _Factory | None = None) -> Any:
        """Register ``factory`` for ``constraint``'s class (a class or an instance); a decorator when
        ``factory`` is omitted."""
        if factory is None:
            return lambda f: self.register(constraint, f)
        if isinstance(constraint, C.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint, C.Constraint):
            raise TypeError(
                f"Expected constraint to be either a Constraint subclass or instance, but got {constraint}"
            )
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint: Any) -> Transform:
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(f"Cannot transform _{type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _to_interval(c: Any) -> Transform:
    lower, upper = c.lower_bound, c.upper_bound
    if isinstance(lower, Number) and isinstance(upper, Number) and lower == 0 and upper == 1:
        return SigmoidTransform()
    return ComposeTransform([SigmoidTransform(), AffineTransform(lower, upper - lower)])


_SHARED: dict[type, _Factory] = {
    C.Real: lambda c: identity_transform,
    C.GreaterThan: lambda c: ComposeTransform([ExpTransform(), AffineTransform(c.lower_bound, 1)]),
    C.GreaterThanEq: lambda c: ComposeTransform([ExpTransform(), AffineTransform(c.lower_bound, 1)]),
    C.LessThan: lambda c: ComposeTransform([ExpTransform(), AffineTransform(c.upper_bound, -1)]),
    C.Interval: _to_interval,
    C.HalfOpenInterval: _to_interval,
}
for _cls, _factory in _SHARED.items():
    biject_to.register(_cls, _factory)
    transform_to.register(_cls, _factory)
for _registry in (biject_to, transform_to):
    _registry.register(C.IndependentConstraint, lambda c, r=_registry: IndependentTransform(
        r(c.base_constraint), c.reinterpreted_batch_ndims))
biject_to.register(C.Simplex, lambda c: StickBreakingTransform())
transform_to.register(C.Simplex, lambda c: SoftmaxTransform())
transform_to.register(C.LowerCholesky, lambda c: LowerCholeskyTransform())
transform_to.register(C.PositiveDefinite, lambda c: PositiveDefiniteTransform())
transform_to.register(C.PositiveSemidefinite, lambda c: PositiveDefiniteTransform())
