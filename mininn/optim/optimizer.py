"""``Optimizer``: parameter groups, per-parameter state, and torch's state-dict format.

Subclasses implement ``step``; this base class owns what every optimizer
shares with ``torch.optim.Optimizer``: the ``param_groups`` list of dicts
(each with a ``params`` list and the optimizer's hyper-parameters), the
``state`` mapping from parameter to a dict of tensors, ``zero_grad``, step
hooks, and ``state_dict``/``load_state_dict`` where parameters are referred to
by integer index in group order, so a state dict saved by torch loads here
and the reverse.
"""

from __future__ import annotations

import copy
import itertools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from mininn.autograd.grad_mode import enable_grad, no_grad
from mininn.nn.modules._utils import typename
from mininn.tensor import Tensor
from mininn.utils.hooks import RemovableHandle

__all__ = ["Optimizer", "required"]

StateDict = dict[str, Any]


class _RequiredParameter:
    """Marks a hyper-parameter that every group must give (torch's ``required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    """Base class of all optimizers (``torch.optim.Optimizer``).

    Args:
        params: An iterable of Tensors, of ``(name, Tensor)`` pairs, or of
            dicts that define parameter groups (each with a ``params`` key).
        defaults: Default hyper-parameters for groups that do not set them.

    Raises:
        TypeError: ``params`` is a single Tensor, or holds something other
            than Tensors.
        ValueError: ``params`` is empty, a parameter is a non-leaf tensor, or a
            parameter appears in two groups.
    """

    # hyper-parameters that a loaded group may lack, and their values then
    _group_fallbacks: dict[str, Any] = {}

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                "dicts, but got " + typename(params)
            )
        self.state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    # ---- groups -------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyper-parameters.

        Args:
            param_group: A dict with a ``params`` key (a Tensor, or an ordered
                iterable of Tensors or ``(name, Tensor)`` pairs) and any
                hyper-parameters that differ from ``defaults``.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list instead."
            )
        tensors, names = _split_names(list(params))
        param_group["params"] = tensors
        if names:
            param_group["param_names"] = names
        for param in tensors:
            _check_optimizable(param, self.defaults.get("differentiable", False))
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    "parameter group didn't specify a value of required optimization "
                    f"parameter {name}"
                )
            param_group.setdefault(name, default)
        if len({id(p) for p in tensors}) != len(tensors):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, "
                "this will cause an error; see github.com/pytorch/pytorch/issues/40967 for more "
                "information",
                stacklevel=3,
            )
        self._check_disjoint(param_group)
        self.param_groups.append(param_group)

    def _check_disjoint(self, param_group: dict[str, Any]) -> None:
        seen: set[int] = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {which} to the optimizer"
                )
        if any(id(p) in seen for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")

    # ---- gradients and steps ------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized parameters.

        Args:
            set_to_none: Set ``.grad`` to None (the default) instead of filling
                it with zeros; ``step`` then skips those parameters.
        """
        for p, _ in self._params_with_grad():
            if set_to_none:
                p.grad = None
            else:
                p.grad.detach_()
                p.grad._data[...] = 0

    def _params_with_grad(self) -> Iterator[tuple[Tensor, dict[str, Any]]]:
        """Each parameter that has a gradient, with its group, in group order."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    yield p, group

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step; subclasses implement it."""
        raise NotImplementedError

    def _run_step(self, closure: Callable[[], Any] | None, update: Callable[[], None]) -> Any:
        """Pre-hooks, ``closure`` (with grad enabled), ``update`` (without), post-hooks."""
        for hook in list(self._optimizer_step_pre_hooks.values()):
            result = hook(self, (), {})
            if result is not None and not (isinstance(result, tuple) and len(result) == 2):
                raise RuntimeError(
                    f"{hook} must return None or a tuple of (new_args, new_kwargs), but got "
                    f"{result}."
                )
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            update()
        for hook in list(self._optimizer_step_post_hooks.values()):
            hook(self, (), {})
        return loss

    def register_step_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` before each ``step``."""
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` after each ``step``."""
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    # ---- state dict ---------------------------------------------------------------
    def state_dict(self) -> StateDict:
        """The optimizer's state in torch's format.

        Returns:
            ``{"state": {index: {name: Tensor, ...}}, "param_groups": [{...,
            "params": [index, ...]}]}``, where parameters are numbered in group
            order. Tensors are references to the live state, as in torch.
        """
        mapping: dict[int, int] = {}
        start = 0
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            groups.append(packed)
        state = {
            (mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()
        }
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: StateDict) -> None:
        """Load a state saved by ``state_dict`` (of this library or of torch).

        Floating-point state is cast to each parameter's dtype and device,
        except ``step``. Group hyper-parameters come from ``state_dict``.

        Raises:
            ValueError: The number of groups, or of parameters in a group, differs.
        """
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of "
                "optimizer's group"
            )
        id_map = dict(
            zip(
                itertools.chain.from_iterable(g["params"] for g in saved_groups),
                itertools.chain.from_iterable(g["params"] for g in groups),
            )
        )
        state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                state[id_map[key]] = _cast_state(id_map[key], value)
            else:
                state[key] = value
        for group, new in zip(groups, saved_groups):
            new["params"] = group["params"]
            if "param_names" in group and "param_names" not in new:
                new["param_names"] = group["param_names"]
        self.state = state
        self.param_groups = saved_groups
        self._fill_group_defaults()

    def _fill_group_defaults(self) -> None:
        """Add the keys that older state dicts lack (torch's ``__setstate__``)."""
        for group in self.param_groups:
            for name, default in self._group_fallbacks.items():
                group.setdefault(name, default)

    def __repr__(self) -> str:
        out = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            out += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    out += f"    {key}: {group[key]}\n"
        return out + ")"


def _split_names(params: list[Any]) -> tuple[list[Any], list[str]]:
    """Separate ``(name, tensor)`` pairs into tensors and names."""
    names = [p[0] for p in params if isinstance(p, tuple)]
    tensors = [p[1] if isinstance(p, tuple) else p for p in params]
    if names and len(names) != len(tensors):
        raise ValueError(
            "all optimizer params should be with/without names. Some param names are missing"
        )
    return tensors, names


def _check_optimizable(param: Any, differentiable: bool) -> None:
    if not isinstance(param, Tensor):
        raise TypeError(
            "optimizer can only optimize Tensors, but one of the params is " + typename(param)
        )
    if not differentiable and not (param.is_leaf or param.retains_grad):
        raise ValueError("can't optimize a non-leaf Tensor")


def _cast_state(param: Tensor, value: Any, key: Any = None) -> Any:
    """torch's ``_process_value_according_to_param_policy``, recursively."""
    if isinstance(value, np.ndarray):
        value = Tensor(value)
    if isinstance(value, Tensor):
        if key == "step":
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)
    if isinstance(value, dict):
        return {k: _cast_state(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(param, v) for v in value)
    return value
