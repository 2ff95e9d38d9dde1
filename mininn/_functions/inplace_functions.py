"""torch's top-level spellings of in-place ops (``torch.sin_(t)``, ``torch.clamp_(t, 0)``, ...) and
of a few Tensor predicates (``torch.is_signed(t)``): each is the Tensor method of that name."""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

from typing import Any

from mininn._functions import inplace as IP
from mininn._functions import scatter as SC
from mininn._functions.inplace_math import INPLACE

abs_ = IP.abs_
neg_ = IP.neg_
exp_ = IP.exp_
log_ = IP.log_
sqrt_ = IP.sqrt_
relu_ = IP.relu_
sigmoid_ = IP.sigmoid_
tanh_ = IP.tanh_
reciprocal_ = IP.reciprocal_
clamp_ = IP.clamp_
clip_ = IP.clip_
fill_ = IP.fill_
zero_ = IP.zero_
index_put_ = SC.index_put_
sin_ = INPLACE["sin_"]
cos_ = INPLACE["cos_"]
tan_ = INPLACE["tan_"]
asin_ = INPLACE["asin_"]
acos_ = INPLACE["acos_"]
atan_ = INPLACE["atan_"]
sinh_ = INPLACE["sinh_"]
cosh_ = INPLACE["cosh_"]
asinh_ = INPLACE["asinh_"]
acosh_ = INPLACE["acosh_"]
atanh_ = INPLACE["atanh_"]
arcsin_ = INPLACE["arcsin_"]
arccos_ = INPLACE["arccos_"]
arctan_ = INPLACE["arctan_"]
arcsinh_ = INPLACE["arcsinh_"]
arccosh_ = INPLACE["arccosh_"]
arctanh_ = INPLACE["arctanh_"]
log2_ = INPLACE["log2_"]
log10_ = INPLACE["log10_"]
log1p_ = INPLACE["log1p_"]
exp2_ = INPLACE["exp2_"]
expm1_ = INPLACE["expm1_"]
rsqrt_ = INPLACE["rsqrt_"]
square_ = INPLACE["square_"]
erf_ = INPLACE["erf_"]
erfc_ = INPLACE["erfc_"]
sinc_ = INPLACE["sinc_"]
logit_ = INPLACE["logit_"]
frac_ = INPLACE["frac_"]
deg2rad_ = INPLACE["deg2rad_"]
rad2deg_ = INPLACE["rad2deg_"]
nan_to_num_ = INPLACE["nan_to_num_"]
floor_ = INPLACE["floor_"]
ceil_ = INPLACE["ceil_"]
trunc_ = INPLACE["trunc_"]
fix_ = INPLACE["fix_"]
round_ = INPLACE["round_"]
negative_ = INPLACE["negative_"]
xlogy_ = INPLACE["xlogy_"]
gcd_ = INPLACE["gcd_"]
lcm_ = INPLACE["lcm_"]
ldexp_ = INPLACE["ldexp_"]
clamp_min_ = INPLACE["clamp_min_"]
clamp_max_ = INPLACE["clamp_max_"]
addmv_ = INPLACE["addmv_"]


def detach_(input: Any) -> Any:
    """Cut ``input`` from the graph, in place."""
    return input.detach_()


def is_nonzero(input: Any) -> bool:
    """The truth of a one-element tensor."""
    return bool(input)


def is_same_size(input: Any, other: Any) -> bool:
    """Whether the two tensors have the same shape."""
    return input._data.shape == other._data.shape


def is_signed(input: Any) -> bool:
    """Whether ``input``'s dtype holds negative numbers."""
    return input.dtype.is_signed


def positive(input: Any) -> Any:
    """``input`` itself (``+x``)."""
    return input


def get_device(input: Any) -> int:
    """The CUDA device index of ``input``, or -1 on the cpu."""
    return input.get_device()


def adjoint(input: Any) -> Any:
    """The conjugate transpose of the last two dims."""
    return input.mH


def fill(input: Any, value: Any) -> Any:
    """A copy of ``input`` with every element set to ``value`` (in the graph: no gradient to ``input``)."""
    return fill_(input.clone(), value)
