"""Complex tensors: ``view_as_complex``/``view_as_real``, ``polar``, ``complex``,
``real``/``imag``, ``conj`` and ``angle``.

Gradients follow torch's convention for a real loss ``L`` of a complex ``z =
x + iy``: the gradient stored for ``z`` is ``dL/dx + i dL/dy``, so a chain
``view_as_complex -> * -> view_as_real`` (rotary position embeddings) gives
the real input exactly the gradient of the equivalent real computation.
"""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

from typing import Any

import numpy as np

from mininn._dtype import get_default_dtype
from mininn._functions._util import _FLOAT, category, torch_type_name, unbroadcast
from mininn._functions.conversion import cast
from mininn._functions.elementwise import div, where
from mininn._functions.unary import abs as abs_
from mininn._functions.unary import sign
from mininn.autograd.graph import ArrayFunction, Context, wrap

_COMPLEX_OF = {np.dtype(np.float32): np.dtype(np.complex64), np.dtype(np.float64): np.dtype(np.complex128)}


def _as_complex(g: Any, real_dtype: Any) -> Any:
    """A gradient ``(..., 2)`` of real and imaginary parts as one complex array."""
    out = np.empty(g.shape[:-1], _COMPLEX_OF[np.dtype(real_dtype)])
    out.real, out.imag = g[..., 0], g[..., 1]
    return out


def _as_real(z: Any) -> Any:
    """``(..., 2)`` real and imaginary parts of a complex array (a view when it is contiguous)."""
    if z.flags.c_contiguous:
        return z.view(z.real.dtype).reshape(z.shape + (2,))
    return np.stack([z.real, z.imag], axis=-1)


class ViewAsComplex(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        ctx.real_dtype = a.dtype
        return np.ascontiguousarray(a).view(_COMPLEX_OF[a.dtype])[..., 0]

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return np.stack([g.real, g.imag], axis=-1).astype(ctx.real_dtype, copy=False)


class ViewAsReal(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, z: Any) -> Any:
        return _as_real(z)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return _as_complex(g, g.dtype)


class Polar(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, r: Any, theta: Any) -> Any:
        cos, sin = np.cos(theta), np.sin(theta)
        ctx.save_for_backward(r, cos, sin)
        out = np.empty(np.broadcast_shapes(r.shape, theta.shape), _COMPLEX_OF[r.dtype])
        out.real, out.imag = r * cos, r * sin
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        r, cos, sin = ctx.saved_tensors
        gr = g.real * cos + g.imag * sin  # Re(g * conj(e^{i theta}))
        gtheta = r * (g.imag * cos - g.real * sin)  # Re(g * conj(i r e^{i theta}))
        return unbroadcast(gr, r.shape), unbroadcast(gtheta, cos.shape)


class Complex(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, re: Any, im: Any) -> Any:
        ctx.shapes = (re.shape, im.shape)
        out = np.empty(np.broadcast_shapes(re.shape, im.shape), _COMPLEX_OF[re.dtype])
        out.real, out.imag = re, im
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        sr, si = ctx.shapes
        return unbroadcast(g.real.copy(), sr), unbroadcast(g.imag.copy(), si)


class _Part(ArrayFunction):
    """``z.real`` or ``z.imag`` (``part``); the gradient is ``g`` in that part of a complex zero."""

    part = ""

    @classmethod
    def forward(cls, ctx: Context, z: Any) -> Any:
        ctx.dtype = z.dtype
        return getattr(z, cls.part)

    @classmethod
    def backward(cls, ctx: Context, g: Any) -> Any:
        out = np.zeros(g.shape, ctx.dtype)
        setattr(out, cls.part, g)
        return out


class Real(_Part):
    part = "real"


class Imag(_Part):
    part = "imag"


class Conj(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, z: Any) -> Any:
        return np.conj(z)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return np.conj(g)


class Angle(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, z: Any) -> Any:
        ctx.save_for_backward(z)
        return np.angle(z).astype(z.real.dtype, copy=False)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (z,) = ctx.saved_tensors
        if z.dtype.kind != "c":
            return np.zeros_like(g)  # piecewise constant: 0 or pi
        r2 = z.real * z.real + z.imag * z.imag
        with np.errstate(divide="ignore", invalid="ignore"):
            # d angle / dx = -y / r^2, d angle / dy = x / r^2
            out = g * (-z.imag + 1j * z.real) / r2
        return np.where(r2 == 0, 0, out).astype(z.dtype, copy=False)


# ---- public functions (also bound as Tensor methods) -------------------------------------


def is_complex(input: Any) -> bool:
    """Whether ``input`` has a complex dtype."""
    return input._data.dtype.kind == "c"


def view_as_complex(input: Any) -> Any:
    """A ``(..., 2)`` floating tensor read as complex numbers ``(...)`` (real, imaginary pairs)."""
    a = input._data
    if a.dtype.kind != "f":
        raise RuntimeError(
            "view_as_complex is only supported for half, float and double tensors, but got a tensor "
            f"of scalar type: {torch_type_name(a.dtype)}"
        )
    if a.ndim == 0 or a.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if a.dtype not in _COMPLEX_OF:
        raise TypeError(f"view_as_complex of a {input.dtype} tensor: complex32 is not supported")
    return ViewAsComplex.apply(input)


def view_as_real(input: Any) -> Any:
    """A complex tensor ``(...)`` as ``(..., 2)`` real and imaginary parts."""
    if not is_complex(input):
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return ViewAsReal.apply(input)


def _check_parts(a: Any, b: Any) -> None:
    da, db = a._data.dtype, b._data.dtype
    if category(da) != _FLOAT or category(db) != _FLOAT:
        raise RuntimeError(
            "Expected both inputs to be Half, Float or Double tensors but got "
            f"{torch_type_name(da)} and {torch_type_name(db)}"
        )
    if da != db:
        raise RuntimeError(
            f"Expected object of scalar type {torch_type_name(da)} but got scalar type "
            f"{torch_type_name(db)} for second argument"
        )
    if da not in _COMPLEX_OF:
        raise TypeError(f"complex tensors from {torch_type_name(da)} parts (complex32) are not supported")


def polar(abs: Any, angle: Any) -> Any:  # noqa: A002 - torch's names
    """``abs * (cos(angle) + i sin(angle))``, elementwise with broadcasting."""
    _check_parts(abs, angle)
    return Polar.apply(abs, angle)


def complex(real: Any, imag: Any) -> Any:  # noqa: A001 - torch's name
    """``real + i imag``, elementwise with broadcasting."""
    _check_parts(real, imag)
    return Complex.apply(real, imag)


def real(input: Any) -> Any:
    """The real part of a complex tensor (a real tensor itself)."""
    return Real.apply(input) if is_complex(input) else input


def imag(input: Any) -> Any:
    """The imaginary part of a complex tensor."""
    if not is_complex(input):
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return Imag.apply(input)


def conj(input: Any) -> Any:
    """The complex conjugate (a real tensor itself)."""
    return Conj.apply(input) if is_complex(input) else input


conj_physical = conj


def angle(input: Any) -> Any:
    """The argument of each complex element in radians (0 or pi for real ones)."""
    x = input
    if category(x._data.dtype) < _FLOAT:
        x = cast(x, get_default_dtype().np)
    return Angle.apply(x)


def sgn(input: Any) -> Any:
    """``x / |x|`` for complex elements (0 at 0), the sign for real ones."""
    if not is_complex(input):
        return sign(input)
    magnitude = abs_(input)
    zero = wrap(magnitude._data == 0)
    return where(zero, 0j, div(input, where(zero, 1.0, magnitude)))
