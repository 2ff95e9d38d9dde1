"""mininn: a from-scratch, PyTorch-compatible module library on NumPy.

Replace ``import torch`` with ``import mininn`` and ``torch.nn`` with
``mininn.nn``; names and semantics follow torch 2.13.
"""

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
    arange,
    as_tensor,
    empty,
    empty_like,
    from_numpy,
    full,
    full_like,
    initial_seed,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    seed,
    tensor,
    zeros,
    zeros_like,
)
from mininn.autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from mininn.tensor import Size, Tensor

half = float16
float = float32  # noqa: A001 - torch's alias
double = float64
long = int64
int = int32  # noqa: A001 - torch's alias

__all__ = [
    "Size",
    "Tensor",
    "arange",
    "as_tensor",
    "bfloat16",
    "bool",
    "device",
    "double",
    "dtype",
    "empty",
    "empty_like",
    "enable_grad",
    "float",
    "float16",
    "float32",
    "float64",
    "from_numpy",
    "full",
    "full_like",
    "get_default_dtype",
    "half",
    "inference_mode",
    "initial_seed",
    "int",
    "int8",
    "int16",
    "int32",
    "int64",
    "is_grad_enabled",
    "linspace",
    "long",
    "manual_seed",
    "no_grad",
    "ones",
    "ones_like",
    "rand",
    "rand_like",
    "randint",
    "randn",
    "randn_like",
    "seed",
    "set_default_dtype",
    "set_grad_enabled",
    "tensor",
    "uint8",
    "zeros",
    "zeros_like",
]

__version__ = "0.1.0"
