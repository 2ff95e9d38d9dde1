"""The hook-based ``spectral_norm`` (torch's older API, kept for its checkpoints).

``spectral_norm(module)`` moves the parameter ``weight`` to ``weight_orig``,
keeps power-iteration vectors in the buffers ``weight_u`` and ``weight_v`` and
sets ``module.weight = weight_orig / sigma`` before every forward, where
``sigma = u . (W v)`` estimates the largest singular value of ``weight_orig``
viewed as a matrix ``W``. In training each forward first runs
``n_power_iterations`` steps (``v = normalize(W^T u)``, ``u = normalize(W v)``)
that update the buffers in place. The state dict records
``spectral_norm: {"weight.version": 1}`` in its metadata, and a version-less
checkpoint holding ``weight`` instead of ``weight_v`` is converted as torch does.
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np

from mininn.autograd.grad_mode import no_grad
from mininn.nn.modules.module import Module
from mininn.nn.parameter import Parameter
from mininn.nn.utils._reparam_hooks import check_unhooked, remove_named_hook
from mininn.tensor import Tensor

__all__ = ["SpectralNorm", "remove_spectral_norm", "spectral_norm"]

T_module = TypeVar("T_module", bound=Module)

_TRANSPOSED = ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")


def _normalize(x: np.ndarray, eps: float) -> np.ndarray:
    """``x / max(||x||, eps)`` (torch's ``F.normalize`` of a vector)."""
    return x / max(float(np.linalg.norm(x)), eps)


def _random_unit_vector(weight: Tensor, size: int, eps: float) -> Tensor:
    """A normalized N(0, 1) draw of ``size`` elements in ``weight``'s dtype: a starting ``u`` or ``v``."""
    return Tensor(_normalize(weight.new_empty(size).normal_(0, 1)._data, eps).astype(weight._data.dtype))


def _weight_matrix(weight: Tensor, dim: int) -> Tensor:
    """``weight`` as ``(size(dim), -1)``."""
    if dim != 0:
        weight = weight.permute(dim, *(d for d in range(weight.ndim) if d != dim))
    return weight.reshape(weight.shape[0], -1)


def _default_dim(module: Module) -> int:
    """The output dim of ``module``'s weight when ``dim`` is None: 1 for ``ConvTranspose*d``, else 0."""
    return 1 if type(module).__name__ in _TRANSPOSED else 0


class SpectralNorm:
    """The forward pre-hook that sets ``module.<name>`` to ``<name>_orig / sigma``."""

    _version: int = 1

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        """``weight`` as ``(size(dim), -1)``."""
        return _weight_matrix(weight, self.dim)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            w = weight_mat._data
            for _ in range(self.n_power_iterations):
                v._data[...] = _normalize(w.T @ u._data, self.eps)
                u._data[...] = _normalize(w @ v._data, self.eps)
            u, v = u.clone(), v.clone()
        sigma = (u * weight_mat.matmul(v)).sum()
        return weight / sigma

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    def _solve_v_and_rescale(self, weight_mat: np.ndarray, u: np.ndarray, target_sigma: Any) -> np.ndarray:
        """A ``v`` with ``u = normalize(W v)`` and ``u . (W v) = target_sigma``."""
        v = np.linalg.pinv(weight_mat.T @ weight_mat) @ weight_mat.T @ u
        return v * (target_sigma / (u @ (weight_mat @ v)))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int, eps: float) -> SpectralNorm:
        check_unhooked(module, SpectralNorm, name, "spectral_norm")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        h, w = fn.reshape_weight_to_matrix(weight).shape
        u = _random_unit_vector(weight, h, eps)
        v = _random_unit_vector(weight, w, eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.data)
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        module._register_state_dict_hook(_SpectralNormStateDictHook(fn))
        module._register_load_state_dict_pre_hook(_SpectralNormLoadStateDictPreHook(fn))
        return fn


class _SpectralNormStateDictHook:
    """Records ``spectral_norm: {"<name>.version": 1}`` in the module's state-dict metadata."""

    def __init__(self, fn: SpectralNorm) -> None:
        self.fn = fn

    def __call__(self, module: Module, state_dict: dict[str, Any], prefix: str,
                 local_metadata: dict[str, Any]) -> None:
        versions = local_metadata.setdefault("spectral_norm", {})
        key = self.fn.name + ".version"
        if key in versions:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        versions[key] = self.fn._version


class _SpectralNormLoadStateDictPreHook:
    """Converts a version-less checkpoint (``weight``, no ``weight_v``) to the current keys."""

    def __init__(self, fn: SpectralNorm) -> None:
        self.fn = fn

    def __call__(self, state_dict: dict[str, Any], prefix: str, local_metadata: dict[str, Any],
                 strict: bool, missing_keys: list[str], unexpected_keys: list[str],
                 error_msgs: list[str]) -> None:
        fn = self.fn
        version = local_metadata.get("spectral_norm", {}).get(fn.name + ".version")
        if version is not None and version >= 1:
            return
        weight_key = prefix + fn.name
        if version is None and weight_key not in state_dict and all(
            weight_key + s in state_dict for s in ("_orig", "_u", "_v")
        ):
            return  # current keys, metadata lost
        missing = [weight_key + s for s in ("_orig", "", "_u") if weight_key + s not in state_dict]
        if missing:
            if strict:
                missing_keys.extend(missing)
            return
        weight_orig = _array(state_dict[weight_key + "_orig"])
        weight = _array(state_dict.pop(weight_key))
        sigma = (weight_orig / weight).mean()
        weight_mat = fn.reshape_weight_to_matrix(Tensor(weight_orig))._data
        u = _array(state_dict[weight_key + "_u"])
        state_dict[weight_key + "_v"] = Tensor(fn._solve_v_and_rescale(weight_mat, u, sigma).astype(u.dtype))


def _array(value: Any) -> np.ndarray:
    return value._data if isinstance(value, Tensor) else np.asarray(value)


def spectral_norm(module: T_module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> T_module:
    """Divide ``module.<name>`` by its spectral norm, estimated by power iteration.

    Args:
        module: The module holding the parameter.
        name: The parameter's name. Default: ``"weight"``.
        n_power_iterations: Power-iteration steps per training forward. Default: 1.
        eps: Floor of the norms when normalizing. Default: 1e-12.
        dim: The output dim of the weight; ``None`` means 1 for ``ConvTranspose*d``, else 0.

    Returns:
        ``module``, with parameter ``<name>_orig``, buffers ``<name>_u``/``<name>_v`` and a
        forward pre-hook.

    Raises:
        RuntimeError: ``name`` already has a spectral_norm hook.
        ValueError: ``n_power_iterations`` is not positive.
    """
    if dim is None:
        dim = _default_dim(module)
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: T_module, name: str = "weight") -> T_module:
    """Undo :func:`spectral_norm`: ``<name>`` is a plain parameter holding ``weight_orig / sigma``.

    Raises:
        ValueError: ``module`` has no spectral_norm of ``name``.
    """
    remove_named_hook(module, SpectralNorm, name, "spectral_norm")
    for hooks in (module._state_dict_hooks, module._load_state_dict_pre_hooks):
        for key, hook in list(hooks.items()):
            if isinstance(hook, (_SpectralNormStateDictHook, _SpectralNormLoadStateDictPreHook)) \
                    and hook.fn.name == name:
                del hooks[key]
    return module
