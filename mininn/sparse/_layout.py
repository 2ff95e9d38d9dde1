"""``layout``: how a tensor stores its elements (``strided`` arrays or ``sparse_coo`` index/value pairs)."""

from __future__ import annotations

__all__ = ["layout", "strided", "sparse_coo"]


class layout:  # noqa: N801 - torch's name
    """A tensor's memory layout, as ``torch.layout``: compare with ``is`` or ``==``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"mininn.{self.name}"

    def __reduce__(self) -> str:
        return self.name  # pickles as the module-level singleton


strided = layout("strided")
sparse_coo = layout("sparse_coo")
