"""Layouts and memory formats: torch's names for how a tensor's elements lie in memory.

mininn's tensors are dense and row-major (``strided``), or sparse COO (``sparse_coo``, made by
``mininn.sparse``), and
``contiguous_format`` the one memory format it makes. The other memory formats
(``channels_last``, ...) exist so that model code passing them runs: in torch they
only reorder strides, never values, so a mininn tensor asked for one holds the same
values as torch's.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "layout",
    "strided",
    "sparse_coo",
    "memory_format",
    "contiguous_format",
    "channels_last",
    "channels_last_3d",
    "preserve_format",
    "check_dense",
]


class _Named:
    """A constant known by its module-level name: printed as ``mininn.<name>``, pickled by name."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"mininn.{self.name}"

    def __reduce__(self) -> str:
        return self.name


class layout(_Named):  # noqa: N801 - torch's name
    """A tensor layout (``mininn.strided``). Use the module constant, never construct one."""

    __slots__ = ()


class memory_format(_Named):  # noqa: N801 - torch's name
    """A memory format (``mininn.channels_last``). Use the module constants, never construct one."""

    __slots__ = ()


strided = layout("strided")
sparse_coo = layout("sparse_coo")  # mininn.sparse's COO tensors
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")


def check_dense(layout: Any = None, pin_memory: bool | None = False) -> None:
    """Refuse what mininn cannot make: a layout other than dense ``strided``, pinned memory.

    ``layout=strided`` (mininn's or torch's) and ``pin_memory=False`` are what mininn
    does anyway, so they pass.
    """
    if layout is not None and layout is not strided and str(layout) != "torch.strided":
        raise NotImplementedError(
            f"layout={layout} is not supported: mininn's factories make dense tensors "
            "(layout=torch.strided); build a sparse COO tensor with sparse_coo_tensor() or .to_sparse()"
        )
    if pin_memory:
        raise RuntimeError(
            "pin_memory=True requires a CUDA or other accelerator backend; no pinned memory "
            "allocator is available on this system."
        )
