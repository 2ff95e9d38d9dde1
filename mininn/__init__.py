"""mininn: a from-scratch, PyTorch-compatible module library on NumPy.

Replace ``import torch`` with ``import mininn`` and ``torch.nn`` with
``mininn.nn``; names and semantics follow torch 2.13.
"""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

# mininn.tensor first: the op modules it imports reach Tensor through it
from mininn.tensor import Size, Tensor  # isort: skip

from mininn import autograd
from mininn._backend import device
from mininn._dtype import (
    bfloat16,
    bool,
    dtype,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    set_default_dtype,
    uint8,
)
from mininn._factories import (
    Generator,
    arange,
    as_tensor,
    bernoulli,
    default_generator,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    get_rng_state,
    initial_seed,
    linspace,
    manual_seed,
    multinomial,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    seed,
    set_rng_state,
    tensor,
    zeros,
    zeros_like,
)
from mininn._functions.elementwise import (
    add,
    allclose,
    bitwise_not,
    clamp,
    clip,
    div,
    eq,
    equal,
    floor_divide,
    ge,
    gt,
    isclose,
    isfinite,
    isinf,
    isnan,
    le,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    lt,
    masked_fill,
    maximum,
    minimum,
    mul,
    ne,
    neg,
    pow,
    remainder,
    sub,
    true_divide,
    where,
)
from mininn._functions.indexing import gather, index_select, masked_select, narrow, nonzero
from mininn._functions.join import cat, chunk, concat, concatenate, split, stack, unbind
from mininn._functions.linalg import bmm, dot, einsum, matmul, mm, outer
from mininn._functions.reduction import (
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    count_nonzero,
    logsumexp,
    max,
    mean,
    min,
    prod,
    return_types,
    std,
    sum,
    var,
)
from mininn._functions.shape import (
    broadcast_to,
    flatten,
    flip,
    movedim,
    permute,
    reshape,
    roll,
    squeeze,
    swapaxes,
    t,
    tile,
    transpose,
    unflatten,
    unsqueeze,
)
from mininn._functions.softmax import log_softmax, softmax
from mininn._functions.sorting import argsort, cumsum, sort, topk
from mininn._functions.unary import (
    abs,
    ceil,
    cos,
    erf,
    exp,
    expm1,
    floor,
    log,
    log1p,
    reciprocal,
    relu,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sqrt,
    square,
    tanh,
    trunc,
)
from mininn.autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from mininn.serialization import load, save

from mininn import nn, optim  # noqa: E402  # isort: skip - they import the names above

half = float16
float = float32  # noqa: A001 - torch's alias
double = float64
long = int64
int = int32  # noqa: A001 - torch's alias
short = int16
absolute = abs
subtract = sub
multiply = mul
divide = div
negative = neg
greater = gt
greater_equal = ge
less = lt
less_equal = le
not_equal = ne


def is_tensor(obj: object) -> "bool":  # noqa: UP037 - `bool` is the dtype here
    """Whether ``obj`` is a mininn Tensor."""
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> "bool":  # noqa: UP037
    """Whether ``input`` has a floating-point dtype."""
    return input.is_floating_point()


def numel(input: Tensor) -> "int":  # noqa: UP037
    """The number of elements of ``input``."""
    return input.numel()


def clone(input: Tensor) -> Tensor:
    """A copy of ``input`` that stays in the graph."""
    return input.clone()


def detach(input: Tensor) -> Tensor:
    """``input`` cut from the graph."""
    return input.detach()


__all__ = [
    "nn",
    "optim",
    "Generator",
    "Size",
    "Tensor",
    "abs",
    "absolute",
    "add",
    "all",
    "allclose",
    "amax",
    "amin",
    "any",
    "arange",
    "argmax",
    "argmin",
    "argsort",
    "as_tensor",
    "autograd",
    "bernoulli",
    "bfloat16",
    "bitwise_not",
    "bmm",
    "bool",
    "broadcast_to",
    "cat",
    "ceil",
    "chunk",
    "clamp",
    "clip",
    "clone",
    "concat",
    "concatenate",
    "cos",
    "count_nonzero",
    "cumsum",
    "default_generator",
    "detach",
    "device",
    "div",
    "divide",
    "dot",
    "double",
    "dtype",
    "einsum",
    "empty",
    "empty_like",
    "enable_grad",
    "eq",
    "equal",
    "erf",
    "exp",
    "expm1",
    "eye",
    "flatten",
    "flip",
    "float",
    "float16",
    "float32",
    "float64",
    "floor",
    "floor_divide",
    "from_numpy",
    "full",
    "full_like",
    "gather",
    "ge",
    "get_default_dtype",
    "get_rng_state",
    "greater",
    "greater_equal",
    "gt",
    "half",
    "index_select",
    "inference_mode",
    "initial_seed",
    "int",
    "int16",
    "int32",
    "int64",
    "int8",
    "is_floating_point",
    "is_grad_enabled",
    "is_tensor",
    "isclose",
    "isfinite",
    "isinf",
    "isnan",
    "le",
    "less",
    "less_equal",
    "linspace",
    "load",
    "log",
    "log1p",
    "log_softmax",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logsumexp",
    "long",
    "lt",
    "manual_seed",
    "masked_fill",
    "masked_select",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "mm",
    "movedim",
    "mul",
    "multinomial",
    "multiply",
    "narrow",
    "ne",
    "neg",
    "negative",
    "no_grad",
    "nonzero",
    "not_equal",
    "numel",
    "ones",
    "ones_like",
    "outer",
    "permute",
    "pow",
    "prod",
    "rand",
    "rand_like",
    "randint",
    "randn",
    "randn_like",
    "randperm",
    "reciprocal",
    "relu",
    "remainder",
    "reshape",
    "return_types",
    "roll",
    "round",
    "rsqrt",
    "save",
    "seed",
    "set_default_dtype",
    "set_grad_enabled",
    "set_rng_state",
    "short",
    "sigmoid",
    "sign",
    "sin",
    "softmax",
    "sort",
    "split",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "std",
    "sub",
    "subtract",
    "sum",
    "swapaxes",
    "t",
    "tanh",
    "tensor",
    "tile",
    "topk",
    "transpose",
    "true_divide",
    "trunc",
    "uint8",
    "unbind",
    "unflatten",
    "unsqueeze",
    "var",
    "where",
    "zeros",
    "zeros_like",
]

__version__ = "0.1.0"
