"""The hook-based ``weight_norm`` (torch's older API, kept for its checkpoints).

``weight_norm(module)`` replaces the parameter ``weight`` by ``weight_g`` (its
norm over every dim but ``dim``) and ``weight_v`` (its direction) and recomputes
``module.weight = weight_v * weight_g / ||weight_v||`` before every forward, so a
state dict with ``weight_g``/``weight_v`` keys saved by torch loads unchanged.
"""

from __future__ import annotations

import warnings
from typing import Any, TypeVar

from mininn.nn.modules.module import Module
from mininn.nn.parameter import Parameter
from mininn.nn.utils._reparam_hooks import check_unhooked, remove_named_hook
from mininn.tensor import Tensor

__all__ = ["WeightNorm", "norm_except_dim", "remove_weight_norm", "weight_norm"]

T_module = TypeVar("T_module", bound=Module)


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:  # noqa: A002 - torch's name
    """The ``pow``-norm of ``v`` over every dim except ``dim`` (kept, others size 1);
    ``dim=-1`` gives the norm of the whole tensor (0-d)."""
    if dim == -1:
        return (v.abs() ** pow).sum() ** (1.0 / pow)
    others = tuple(d for d in range(v.ndim) if d != dim)
    return (v.abs() ** pow).sum(dim=others, keepdim=True) ** (1.0 / pow)


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """``v * (g / ||v||)`` with the norm taken over every dim but ``dim``."""
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_g`` and ``<name>_v``."""

    def __init__(self, name: str, dim: int) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> WeightNorm:
        check_unhooked(module, WeightNorm, name, "weight_norm")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: T_module, name: str = "weight", dim: int | None = 0) -> T_module:
    """Reparametrize ``module.<name>`` as magnitude ``<name>_g`` times direction ``<name>_v``.

    Deprecated in torch in favour of ``parametrizations.weight_norm`` (it warns the same).

    Args:
        module: The module holding the parameter.
        name: The parameter's name. Default: ``"weight"``.
        dim: The dim whose slices get their own magnitude; ``None`` for one norm.

    Returns:
        ``module``, with parameters ``<name>_g`` and ``<name>_v`` and a forward pre-hook.

    Raises:
        RuntimeError: ``name`` already has a weight_norm hook.
    """
    warnings.warn(
        "`torch.nn.utils.weight_norm` is deprecated in favor of "
        "`torch.nn.utils.parametrizations.weight_norm`.",
        FutureWarning,
        stacklevel=2,
    )
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: T_module, name: str = "weight") -> T_module:
    """Undo :func:`weight_norm`: ``<name>`` is a plain parameter with the current weight again.

    Raises:
        ValueError: ``module`` has no weight_norm of ``name``.
    """
    remove_named_hook(module, WeightNorm, name, "weight_norm")
    return module
