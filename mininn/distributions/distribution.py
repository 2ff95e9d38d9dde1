"""``Distribution``: the base of the probability distributions, torch's contract.

A distribution has a ``batch_shape`` (independent parameter sets) and an
``event_shape`` (one draw); ``sample(sample_shape)`` returns
``sample_shape + batch_shape + event_shape``. With ``validate_args`` (on by
default, as in torch) parameters are checked against ``arg_constraints`` when
the distribution is built, and ``log_prob`` checks its value against
``support``, with torch's messages.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, ClassVar

import mininn
from mininn.distributions import constraints
from mininn.tensor import Size, Tensor

__all__ = ["Distribution"]


class Distribution:
    """The base class: subclasses define ``arg_constraints``, ``support`` and the math."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__
    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {}

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for distributions built later."""
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: Any = (), event_shape: Any = (),
                 validate_args: bool | None = None) -> None:
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()

    def _check_parameters(self) -> None:
        for param, constraint in self.arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if param not in self.__dict__ and isinstance(getattr(type(self), param, None), cached_property):
                continue  # the other parametrisation (probs/logits), not given
            value = getattr(self, param)
            if not bool(constraint.check(value).all()):
                raise ValueError(
                    f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) "
                    f"of distribution {self!r} to satisfy the constraint {constraint!r}, but found invalid "
                    f"values:\n{value}"
                )

    # ---- shapes -----------------------------------------------------------------------
    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    def _extended_shape(self, sample_shape: Any = ()) -> Size:
        return Size(tuple(sample_shape) + self._batch_shape + self._event_shape)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        """The same distribution repeated over ``batch_shape`` (each family defines it)."""
        raise NotImplementedError

    def _get_checked_instance(self, cls: type, _instance: Any = None) -> Any:
        """A bare instance for a subclass's ``expand`` (torch's helper, which user subclasses call)."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {type(self).__name__} of {cls.__name__} that defines a custom __init__ method "
                "must also define a custom .expand() method."
            )
        return self.__new__(type(self)) if _instance is None else _instance

    def _expanded(self, batch_shape: Any, params: dict[str, int], **extra: Any) -> Any:
        """A copy over ``batch_shape`` whose tensors ``params`` (name -> event dims) are expanded,
        not copied; ``extra`` attributes are set as given. Validation is not rerun."""
        batch_shape = Size(batch_shape)
        new = type(self).__new__(type(self))
        for name, event_dims in params.items():
            if name in self.__dict__:
                value = self.__dict__[name]
                tail = tuple(value.shape[value.dim() - event_dims:]) if event_dims else ()
                new.__dict__[name] = value.expand(tuple(batch_shape) + tail)
        new.__dict__.update(extra)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    # ---- the interface ----------------------------------------------------------------
    @property
    def support(self) -> constraints.Constraint:
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{type(self)} does not implement mean")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{type(self)} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{type(self)} does not implement variance")

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """A draw of shape ``sample_shape + batch_shape + event_shape``, outside the graph."""
        with mininn.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """A reparameterised draw: gradients flow to the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        """``sample((n,))``."""
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        """``exp(entropy)``."""
        return mininn.exp(self.entropy())

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise NotImplementedError

    # ---- value checks -------------------------------------------------------------------
    def _validate_sample(self, value: Any) -> None:
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        start = value.dim() - len(self._event_shape)
        if value.shape[start:] != self._event_shape:
            raise ValueError(
                f"The right-most size of value must match event_shape: {value.shape} vs {self._event_shape}."
            )
        expected = self._batch_shape + self._event_shape
        for i, j in zip(reversed(value.shape), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(
                    f"Value is not broadcastable with batch_shape+event_shape: {value.shape} vs "
                    f"{Size(expected)}."
                )
        support = self.support
        if not bool(support.check(value).all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                f"within the support ({support!r}) of the distribution {self!r}, but found invalid "
                f"values:\n{value}"
            )

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(
            f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
            for p in names
        )
        return f"{type(self).__name__}({args})"
