"""Ready-made parametrizations built on ``nn.utils.parametrize``: ``weight_norm``,
``spectral_norm`` and ``orthogonal`` (torch's current API; state-dict keys
``parametrizations.weight.original0``/``original1``, and ``parametrizations.weight.original``
with ``parametrizations.weight.0._u``/``_v`` or ``parametrizations.weight.0.base``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mininn._factories import randn, zeros
from mininn._functions.join import cat
from mininn.nn.modules.module import Module
from mininn.nn.utils import _orthogonal, parametrize
from mininn.nn.utils.spectral_norm import _default_dim, _normalize, _random_unit_vector, _weight_matrix
from mininn.nn.utils.weight_norm import _weight_norm, norm_except_dim
from mininn.tensor import Tensor

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


class _WeightNorm(Module):
    """``weight = g * v / ||v||`` from ``(g, v)``; ``dim`` is kept by the norm (``-1``: none)."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Parametrize ``module.<name>`` as magnitude times direction.

    The originals are ``parametrizations.<name>.original0`` (the magnitude ``g``) and
    ``original1`` (the direction ``v``). A checkpoint of the older hook-based
    ``weight_norm`` (keys ``<name>_g``, ``<name>_v``) loads too.

    Args:
        module: The module holding the parameter.
        name: The parameter's name. Default: ``"weight"``.
        dim: The dim whose slices get their own magnitude; ``None`` for one norm.
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict: dict[str, Any], prefix: str, *args: Any) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    """``weight / sigma``, ``sigma`` estimated by power iteration on the buffers ``_u``, ``_v``
    (updated in place at each training forward); a 1-d weight is just normalized."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            self.register_buffer("_u", _random_unit_vector(weight, h, eps))
            self.register_buffer("_v", _random_unit_vector(weight, w, eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        return _weight_matrix(weight, self.dim)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        w = weight_mat._data
        for _ in range(n_power_iterations):
            self._u._data[...] = _normalize(w @ self._v._data, self.eps)
            self._v._data[...] = _normalize(w.T @ self._u._data, self.eps)

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            norm = (weight * weight).sum().sqrt().clamp(min=self.eps)
            return weight / norm
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = (u * weight_mat.matmul(v)).sum()
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Parametrize ``module.<name>`` as itself divided by its spectral norm.

    Takes the arguments of the hook-based :func:`mininn.nn.utils.spectral_norm.spectral_norm`.

    Raises:
        ValueError: ``module`` has no tensor ``name``, or ``n_power_iterations <= 0``.
        IndexError: ``dim`` is out of range.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = _default_dim(module)
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


_ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")


class _Orthogonal(Module):
    """Maps a matrix (or a batch) to an orthogonal one of the same shape.

    ``matrix_exp`` and ``cayley`` map the skew-symmetric matrix built from the lower
    triangle; ``householder`` multiplies the reflectors stored below the diagonal (the
    diagonal's signs pick the columns' signs). With ``use_trivialization`` the result is
    multiplied by the buffer ``base``, which ``right_inverse`` sets to the assigned matrix
    (made orthogonal), returning the matrix that maps to the identity.
    """

    def __init__(self, weight: Tensor, orthogonal_map: str, *, use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        n, k = x.shape[-2:]
        transposed = n < k
        if transposed:
            x = x.mT
            n, k = k, n
        if self.orthogonal_map == "householder":
            a = x * Tensor(np.tril(np.ones((n, k), dtype=x._data.dtype), -1))
            tau = 2.0 / (1.0 + (a * a).sum(dim=-2))
            q = _orthogonal.HouseholderProduct.apply(a, tau)
            q = q * Tensor(_orthogonal.householder_signs(x._data))
        else:
            y = x * Tensor(np.tril(np.ones((n, k), dtype=x._data.dtype)))
            if n != k:
                y = cat([y, zeros(*y.shape[:-1], n - k, dtype=y.dtype, device=y.device)], dim=-1)
            skew = y - y.mT
            exp_map = _orthogonal.MatrixExp if self.orthogonal_map == "matrix_exp" else _orthogonal.Cayley
            q = exp_map.apply(skew)
            q = q[..., :k]
        if "base" in self._buffers:
            q = self.base @ q
        return q.mT if transposed else q

    def right_inverse(self, q: Tensor) -> Tensor:
        if q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {q.shape}.")
        arr = q.detach()._data
        transposed = arr.shape[-2] < arr.shape[-1]
        if transposed:
            arr = np.swapaxes(arr, -1, -2)
        n, k = arr.shape[-2:]
        if "base" not in self._buffers:
            if self.orthogonal_map != "householder":
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the "
                                          "Cayley parametrizations when use_trivialization=False.")
            a, tau = _orthogonal.geqrf(arr)
            diag = np.diagonal(a, axis1=-2, axis2=-1)
            signs = np.sign(diag) * np.where(tau == 0.0, -1, 1)  # LAPACK's tau 0: no reflection
            idx = np.arange(k)
            a[..., idx, idx] = signs
            return Tensor(np.swapaxes(a, -1, -2) if transposed else a)
        if n == k:
            base = arr.copy() if _orthogonal.is_orthogonal(arr) else _orthogonal.make_orthogonal(arr)
        else:
            fill = randn(*arr.shape[:-1], n - k, dtype=q.dtype)._data
            base = _orthogonal.make_orthogonal(np.concatenate([arr, fill], axis=-1))
        self.base = Tensor(base)
        neg_id = np.zeros(q.shape, dtype=arr.dtype)
        idx = np.arange(min(q.shape[-2:]))
        neg_id[..., idx, idx] = -1.0
        return Tensor(neg_id)


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Parametrize ``module.<name>`` (a matrix or a batch of them) as an orthogonal matrix.

    Args:
        module: The module holding the tensor.
        name: Its name. Default: ``"weight"``.
        orthogonal_map: ``"matrix_exp"``, ``"cayley"`` or ``"householder"``. Default:
            ``"matrix_exp"`` for square matrices, ``"householder"`` otherwise.
        use_trivialization: Keep a ``base`` buffer so that assignment works for every
            map and optimisation happens around the current point. Default: True.

    Raises:
        ValueError: no such tensor, fewer than 2 dims, or an unknown ``orthogonal_map``.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in _ORTHOGONAL_MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
