"""``autocast``: torch's mixed-precision context, as model files use it in ``forward``.

mininn computes every op in its inputs' dtypes; it has no autocast. So, as torch behaves where the
device is missing, ``autocast("cuda")`` without CUDA warns and does nothing, and ``enabled=False``
(common around numerically sensitive code) does nothing; an autocast that torch would really apply
(``"cpu"``, or ``"cuda"`` with CuPy present) raises on entry with what to do instead, rather than
computing at a precision torch would not.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

from mininn import _dtype

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype"]

# torch's device types, in the order its message lists them
_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga",
                 "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


def _cuda_available() -> bool:
    from mininn import cuda

    return cuda.is_available()


def get_autocast_dtype(device_type: str) -> Any:
    """The dtype an autocast region of ``device_type`` would default to (``float16``; cpu: ``bfloat16``)."""
    return _dtype.bfloat16 if device_type == "cpu" else _dtype.float16


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether an autocast region is in force: never in mininn (an enabled one cannot be entered)."""
    return False


class autocast:  # noqa: N801 - torch's name
    """``with autocast(device_type, dtype=None, enabled=True, cache_enabled=None):`` or as a decorator."""

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type.split(":")[0] not in _DEVICE_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of device "
                               f"string: {device_type}")
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._enabled = bool(enabled)
        if self._enabled and device_type != "cpu" and not (device_type == "cuda" and _cuda_available()):
            warnings.warn(f"{'CUDA' if device_type == 'cuda' else device_type} is not available or torch_xla "
                          "is imported. Disabling autocast.", UserWarning, stacklevel=2)
            self._enabled = False

    def __enter__(self) -> None:
        if self._enabled:
            raise NotImplementedError(
                f"autocast({self.device!r}, dtype={self.fast_dtype!r}) is not supported in mininn: ops "
                "compute in their inputs' dtypes. Cast the model and inputs instead (model.to(dtype)), or "
                "pass enabled=False."
            )

    def __exit__(self, *exc: Any) -> None:
        return None

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def in_autocast(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return in_autocast
