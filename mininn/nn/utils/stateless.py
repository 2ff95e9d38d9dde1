"""``functional_call``: run a module with some of its parameters and buffers replaced for
one call (torch's deprecated ``nn.utils.stateless`` entry point)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from mininn.nn.modules.module import Module
from mininn.tensor import Tensor

__all__ = ["functional_call"]

_MISSING = object()


def _named_tensors(module: Module) -> dict[str, Tensor]:
    named = dict(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    return named


def _untie(module: Module, tensors: dict[str, Tensor]) -> dict[str, Tensor]:
    """Give every name of a tied tensor the value given for one of them."""
    groups: dict[int, list[str]] = {}
    for name, t in _named_tensors(module).items():
        groups.setdefault(id(t), []).append(name)
    result = dict(tensors)
    for names in groups.values():
        given = [n for n in names if n in tensors]
        if len(names) < 2 or not given:
            continue
        if len({id(tensors[n]) for n in given}) > 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(given)}, which are tied. "
                             "Consider using tie_weights=False")
        for name in names:
            result.setdefault(name, tensors[given[0]])
    return result


def _check_keys(module: Module, tensors: Mapping[str, Tensor]) -> None:
    expected = set(_named_tensors(module))
    unexpected = sorted(set(tensors) - expected)
    missing = sorted(expected - set(tensors))
    msgs = []
    if unexpected:
        msgs.append("Unexpected key(s): {}.".format(", ".join(map(repr, unexpected))))
    if missing:
        msgs.append("Missing key(s): {}.".format(", ".join(map(repr, missing))))
    if msgs:
        report = "\n\t".join(msgs)
        raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t{report}")


def _owner(module: Module, name: str) -> tuple[Module, str]:
    *path, attr = name.split(".")
    for part in path:
        child = module._modules.get(part)
        if child is None:
            raise AttributeError(f"{module._get_name()} has no attribute `{part}`")
        module = child
    return module, attr


def _swap(module: Module, attr: str, value: Any) -> Any:
    """Put ``value`` in the slot ``attr`` (parameter, buffer or attribute); return what was there."""
    for slots in (module._parameters, module._buffers):
        if attr in slots:
            old = slots[attr]
            slots[attr] = value
            return old
    old = module.__dict__.get(attr, _MISSING)
    if value is _MISSING:
        delattr(module, attr)
    else:
        object.__setattr__(module, attr, value)
    return old


@contextmanager
def _reparametrized(module: Module, tensors: Mapping[str, Tensor]) -> Iterator[None]:
    swapped: list[tuple[Module, str, Any]] = []
    try:
        for name, value in tensors.items():
            owner, attr = _owner(module, name)
            swapped.append((owner, attr, _swap(owner, attr, value)))
        yield
    finally:
        for owner, attr, old in reversed(swapped):
            _swap(owner, attr, old)


def functional_call(module: Module, parameters_and_buffers: dict[str, Tensor], args: Any = None,
                    kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the named tensors in place of the module's own.

    Deprecated in torch in favour of ``torch.func.functional_call`` (it warns the same).

    Args:
        module: The module to call.
        parameters_and_buffers: Dotted name -> tensor; names the module lacks are set as
            attributes for the call.
        args: Positional arguments (a single non-tuple value is one argument).
        kwargs: Keyword arguments.
        tie_weights: A value given for one name of a tied tensor is used for all of them.
        strict: The names must be exactly the module's parameters and buffers.

    Raises:
        ValueError: two values for one tied tensor.
        RuntimeError: with ``strict``, torch's "Error(s) in reparametrizing" report.
    """
    warnings.warn(
        "`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in a "
        "future version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in "
        "replacement.",
        FutureWarning,
        stacklevel=2,
    )
    tensors = dict(parameters_and_buffers.items())
    if tie_weights:
        tensors = _untie(module, tensors)
    if strict:
        _check_keys(module, tensors)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrized(module, tensors):
        return module(*args, **(kwargs or {}))
