"""In-place forms (``tan_``, ``clamp_min_``, ``cumsum_``, ``addmm_``, ``eq_``, ...) of the
out-of-place ops, and the in-place shape ops (``unsqueeze_``, ``t_``, ...).

Each goes through ``inplace._apply``, so it follows torch's rules: written into
the tensor's own array when autograd is not involved, rebased onto the graph
when it is, and an error on a leaf that requires grad.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from mininn._functions import blas as BL
from mininn._functions import cumulative as CU
from mininn._functions import elementwise as E
from mininn._functions import inplace as IP
from mininn._functions import pointwise as PW
from mininn._functions import shape as S
from mininn._functions import sorting as SO
from mininn._functions import transcendental as TR
from mininn._functions import unary as U


def _input_first(op: Callable[..., Any]) -> inspect.Signature:
    """``op``'s signature with its first parameter named ``input``, as the wrappers below take it."""
    sig = inspect.signature(op)
    first, *rest = sig.parameters.values()
    return sig.replace(parameters=[first.replace(name="input"), *rest])


def _inplace(op: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``name(self, *args, **kwargs)``: ``op(self, *args, **kwargs)`` written into ``self``."""

    def fn(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002 - torch's name
        return IP._apply(input, lambda s, *a: op(s, *a, **kwargs), *args)

    fn.__name__ = fn.__qualname__ = name
    fn.__signature__ = _input_first(op)  # type: ignore[attr-defined] - op's names, for inspect
    fn.__doc__ = f"``{name[:-1]}`` in place."
    return fn


_OPS: dict[str, Callable[..., Any]] = {
    # unary math
    "sin_": U.sin, "cos_": U.cos, "tan_": TR.tan, "asin_": TR.asin, "acos_": TR.acos, "atan_": TR.atan,
    "sinh_": TR.sinh, "cosh_": TR.cosh, "asinh_": TR.asinh, "acosh_": TR.acosh, "atanh_": TR.atanh,
    "arcsin_": TR.asin, "arccos_": TR.acos, "arctan_": TR.atan, "arcsinh_": TR.asinh, "arccosh_": TR.acosh,
    "arctanh_": TR.atanh, "log2_": TR.log2, "log10_": TR.log10, "log1p_": U.log1p, "exp2_": TR.exp2,
    "expm1_": U.expm1, "rsqrt_": U.rsqrt, "square_": U.square, "erf_": U.erf, "erfc_": TR.erfc,
    "erfinv_": TR.erfinv, "sinc_": TR.sinc, "logit_": TR.logit, "frac_": TR.frac, "deg2rad_": TR.deg2rad,
    "rad2deg_": TR.rad2deg, "nan_to_num_": TR.nan_to_num, "floor_": U.floor, "ceil_": U.ceil,
    "trunc_": U.trunc, "fix_": U.trunc, "round_": U.round, "sign_": U.sign, "absolute_": U.abs,
    "negative_": E.neg,
    # binary math
    "atan2_": TR.atan2, "arctan2_": TR.atan2, "hypot_": TR.hypot, "fmod_": TR.fmod, "xlogy_": TR.xlogy,
    "copysign_": TR.copysign, "remainder_": E.remainder, "floor_divide_": E.floor_divide,
    "gcd_": TR.gcd, "lcm_": TR.lcm, "ldexp_": TR.ldexp, "lgamma_": TR.lgamma, "digamma_": TR.digamma,
    "true_divide_": E.div, "divide_": E.div, "multiply_": E.mul, "subtract_": E.subtract,
    "clamp_min_": PW.clamp_min, "clamp_max_": PW.clamp_max,
    # comparisons and logic (the result in self's dtype)
    "eq_": E.eq, "ne_": E.ne, "lt_": E.lt, "le_": E.le, "gt_": E.gt, "ge_": E.ge,
    "greater_": E.gt, "greater_equal_": E.ge, "less_": E.lt, "less_equal_": E.le, "not_equal_": E.ne,
    "logical_and_": E.logical_and, "logical_or_": E.logical_or, "logical_xor_": E.logical_xor,
    "logical_not_": E.logical_not,
    # running ops and fused products
    "cumsum_": SO.cumsum, "cumprod_": CU.cumprod, "addmm_": BL.addmm, "baddbmm_": BL.baddbmm,
    "addbmm_": BL.addbmm, "addmv_": BL.addmv, "addr_": BL.addr,
}

INPLACE: dict[str, Callable[..., Any]] = {name: _inplace(op, name) for name, op in _OPS.items()}


def _shape_inplace(op: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``name(self, *args)``: ``self`` takes the shape ``op`` gives it (a view of the same data)."""

    def fn(self: Any, *args: Any, **kwargs: Any) -> Any:
        if IP._tracked(self):
            IP.check_leaf(self)
            self._become(op(self, *args, **kwargs))
        else:
            self._data = op(self, *args, **kwargs)._data
        return self

    fn.__name__ = fn.__qualname__ = name
    fn.__signature__ = _input_first(op)  # type: ignore[attr-defined] - op's names, for inspect
    fn.__doc__ = f"``{name[:-1]}`` in place: this tensor takes the new shape."
    return fn


SHAPE_INPLACE: dict[str, Callable[..., Any]] = {
    name: _shape_inplace(op, name)
    for name, op in {
        "unsqueeze_": S.unsqueeze, "squeeze_": S.squeeze, "t_": S.t, "transpose_": S.transpose,
        "swapdims_": S.transpose, "swapaxes_": S.swapaxes,
    }.items()
}
