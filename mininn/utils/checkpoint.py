"""``torch.utils.checkpoint``: activation checkpointing, as model files call it in ``forward``.

torch's checkpointing trades memory for time: it drops a segment's activations and recomputes them
in backward, with the same outputs and gradients as calling the segment directly. mininn calls the
segment directly, so results and gradients are torch's (random draws happen once, as in torch's
forward); only the memory saving is not had. Arguments and warnings follow torch 2.13.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["checkpoint", "checkpoint_sequential", "noop_context_fn"]


def noop_context_fn() -> tuple[Any, Any]:
    """The default ``context_fn``: no context around the forward or the recomputation."""
    import contextlib

    return contextlib.nullcontext(), contextlib.nullcontext()


def _warn_implicit_reentrant(name: str, rest: str) -> None:
    warnings.warn(
        f"{name}: the use_reentrant parameter should be passed explicitly. {rest} use_reentrant=False is "
        "recommended, but if you need to preserve the current default behavior, you can pass "
        "use_reentrant=True. Refer to docs for more details on the differences between the two variants.",
        UserWarning,
        stacklevel=3,
    )


def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable[[], tuple[Any, Any]] = noop_context_fn,
               determinism_check: str = "default", debug: bool = False, early_stop: bool = True,
               **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``, with torch's checks of ``use_reentrant`` and keyword arguments."""
    if use_reentrant is None:
        _warn_implicit_reentrant(
            "torch.utils.checkpoint",
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception.",
        )
        use_reentrant = True
    kwargs.pop("preserve_rng_state", True)
    if use_reentrant:
        if context_fn is not noop_context_fn or debug:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if not any(getattr(a, "requires_grad", False) for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", UserWarning,
                          stacklevel=2)
    return function(*args, **kwargs)


def checkpoint_sequential(functions: Any, segments: int, input: Any, use_reentrant: bool | None = None,  # noqa: A002
                          **kwargs: Any) -> Any:
    """Run ``functions`` (a ``Sequential`` or a list of modules) on ``input`` in ``segments`` chunks."""
    if use_reentrant is None:
        _warn_implicit_reentrant(
            "torch.utils.checkpoint.checkpoint_sequential",
            "In version 2.9 we will raise an exception if use_reentrant is not passed.",
        )
    kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    layers: Sequence[Any] = list(functions.children()) if hasattr(functions, "children") else list(functions)
    segment_size = len(layers) // segments
    x, end = input, -1
    for start in range(0, segment_size * (segments - 1), segment_size):  # torch's segmenting (step 0 raises)
        end = start + segment_size - 1
        for layer in layers[start:end + 1]:
            x = layer(x)
    for layer in layers[end + 1:]:
        x = layer(x)
    return x
