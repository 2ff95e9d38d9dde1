"""``torch.backends.cuda``: cuBLAS and attention switches (``matmul.allow_tf32``, ``enable_flash_sdp``).

mininn's matmuls are NumPy's (CuPy's on cuda) at full precision whatever the flags say; the flags
keep their values so code that reads them back sees what it set.
"""

from __future__ import annotations

from typing import Any

__all__ = ["matmul", "is_built", "enable_flash_sdp", "enable_mem_efficient_sdp", "enable_math_sdp",
           "flash_sdp_enabled", "mem_efficient_sdp_enabled", "math_sdp_enabled"]


class _MatmulFlags:
    """``torch.backends.cuda.matmul``: three bool flags; other names raise ``Unknown attribute``."""

    _DEFAULTS = {"allow_tf32": False, "allow_fp16_reduced_precision_reduction": True,
                 "allow_bf16_reduced_precision_reduction": True}

    def __init__(self) -> None:
        object.__setattr__(self, "_values", dict(self._DEFAULTS))

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._DEFAULTS:
            raise AttributeError(f"Unknown attribute {name}")
        if not isinstance(value, bool):
            if name == "allow_tf32":
                raise RuntimeError(f"set_allow_tf32_cublas expects a bool, but got {type(value).__name__}")
            raise TypeError(f"{name} expects a bool or a tuple/list of bools, but got {type(value)}")
        self._values[name] = value


matmul = _MatmulFlags()
_SDP = {"flash": True, "mem_efficient": True, "math": True}


def is_built() -> bool:
    """Whether mininn was built with CUDA: it never is (cuda tensors go through CuPy)."""
    return False


def _enable(kind: str, enabled: bool) -> None:
    _SDP[kind] = bool(enabled)


def enable_flash_sdp(enabled: bool) -> None:
    """Record whether flash attention may be used (mininn has one attention kernel)."""
    _enable("flash", enabled)


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Record whether memory-efficient attention may be used."""
    _enable("mem_efficient", enabled)


def enable_math_sdp(enabled: bool) -> None:
    """Record whether the math attention kernel may be used."""
    _enable("math", enabled)


def flash_sdp_enabled() -> bool:
    return _SDP["flash"]


def mem_efficient_sdp_enabled() -> bool:
    return _SDP["mem_efficient"]


def math_sdp_enabled() -> bool:
    return _SDP["math"]
