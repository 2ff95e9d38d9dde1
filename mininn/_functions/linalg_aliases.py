"""torch's top-level spellings of ``torch.linalg`` functions, with torch's top-level argument name.

``torch.linalg.det(A)`` names its argument ``A``; ``torch.det(input)``, ``torch.inverse(input)``,
``torch.slogdet(input)`` and ``torch.matrix_power(input, n)`` name it ``input``. Each is the
``linalg`` function under that name.
"""

# ruff: noqa: A002 - torch's argument name (input) shadows a builtin

from __future__ import annotations

from typing import Any

from mininn._functions import solvers as SV

__all__ = ["det", "inverse", "matrix_power", "slogdet"]


def det(input: Any) -> Any:
    """The determinant of each square matrix (``linalg.det``)."""
    return SV.det(input)


def slogdet(input: Any) -> Any:
    """``(sign, logabsdet)`` of each determinant (``linalg.slogdet``)."""
    return SV.slogdet(input)


def inverse(input: Any) -> Any:
    """The inverse of each square matrix (``linalg.inv``)."""
    return SV.inv(input)


def matrix_power(input: Any, n: int) -> Any:
    """``input`` multiplied by itself ``n`` times (``linalg.matrix_power``)."""
    return SV.matrix_power(input, n)
