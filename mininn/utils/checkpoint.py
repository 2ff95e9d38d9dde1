"""``torch.utils.checkpoint``: activation checkpointing, as model files call it in ``forward``.

torch's checkpoint saves memory by dropping a segment's activations and
recomputing them in backward; the values and gradients are those of running
the segment plainly. mininn runs the segment plainly (it keeps the activations),
so outputs and gradients are torch's, and only the memory saving is not made.
torch's rules that change results are kept: with ``use_reentrant=True`` (the
default, with torch's warning when it is not passed) the segment runs without
gradient tracking when none of its tensor inputs requires a gradient (torch warns
``None of the inputs have requires_grad=True. Gradients will be None``), and
keyword arguments are refused; ``use_reentrant=False`` takes keyword arguments and
runs the segment inside ``context_fn()``'s forward context.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from mininn.autograd import no_grad
from mininn.nn.modules.container import Sequential
from mininn.tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "noop_context_fn"]


def noop_context_fn() -> tuple[contextlib.nullcontext[None], contextlib.nullcontext[None]]:
    """The default ``context_fn``: two contexts that do nothing (forward, recompute)."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable[[], Any] = noop_context_fn, determinism_check: str = "default",
               debug: bool = False, early_stop: bool = True, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``, with torch's checkpoint rules on arguments and gradient tracking.

    Raises:
        ValueError: keyword arguments (other than ``preserve_rng_state``), ``context_fn``
            or ``debug`` with ``use_reentrant=True`` (torch's messages).
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
            "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
            "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
            "you can pass use_reentrant=True. Refer to docs for more details on the differences between the "
            "two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    kwargs.pop("preserve_rng_state", None)  # nothing is recomputed, so there is no RNG state to restore
    if not use_reentrant:
        forward_context, _ = context_fn()
        with forward_context:
            return function(*args, **kwargs)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if context_fn is not noop_context_fn or debug is not False:
        raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
    if not any(a.requires_grad for a in args if isinstance(a, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)
        with no_grad():
            return function(*args)
    return function(*args)


def checkpoint_sequential(functions: Sequential | Sequence[Callable[[Any], Any]], segments: int, input: Any,
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """Run ``functions`` in order on ``input``; each of ``segments`` parts but the last goes through
    ``checkpoint``.

    Raises:
        ValueError: keyword arguments other than ``preserve_rng_state``, or more
            segments than functions (torch's messages).
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
            "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
            "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
            "you can pass use_reentrant=True. Refer to docs for more details on the differences between the "
            "two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    kwargs.pop("preserve_rng_state", None)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    steps = list(functions.children()) if isinstance(functions, Sequential) else list(functions)
    size = len(steps) // segments
    if size == 0:
        raise ValueError("range() arg 3 must not be zero")
    end = size * (segments - 1)
    value = input
    for start in range(0, end, size):
        value = checkpoint(_run_in_order(steps[start : start + size]), value, use_reentrant=use_reentrant)
    return _run_in_order(steps[end:])(value)


def _run_in_order(steps: list[Callable[[Any], Any]]) -> Callable[[Any], Any]:
    def forward(value: Any) -> Any:
        for step in steps:
            value = step(value)
        return value

    return forward
