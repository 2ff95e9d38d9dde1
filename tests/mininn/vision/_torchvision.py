"""Real torchvision for reference comparisons, importable beside the CPU-only torch wheel.

PyPI's torchvision wheel links its C++ operators against CUDA torch; with the CPU torch
these machines install, loading them fails and ``torchvision._meta_registrations`` then
raises at import (``operator torchvision::nms does not exist``). Everything the tests
compare with (the model builders, the Python ops, transforms) is Python code, so the
registrations are skipped: an empty module stands in for them before the first import.
Operators that need the C++ kernels (``nms``, ``roi_align``) are compared against
torchvision's documented semantics instead.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest


def import_torchvision() -> Any:
    """``torchvision`` (skips the test when it is not installed)."""
    pytest.importorskip("torch")
    name = "torchvision._meta_registrations"
    if "torchvision" not in sys.modules:
        sys.modules.setdefault(name, types.ModuleType(name))
    return pytest.importorskip("torchvision")
