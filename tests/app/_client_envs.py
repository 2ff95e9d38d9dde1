"""Stock clients that cannot share the test environment run from their own virtual environment.

MLServer 1.7 pins ``fastapi<0.116`` (and with it an older Starlette), which the server's
own FastAPI excludes, so its codecs cannot be installed beside the server. ``client_python``
creates one venv per pinned client, once per machine: under ``$MININN_CLIENT_VENVS`` or
``<tmp>/mininn-client-venvs/<name>-py<version>``, guarded by a file lock (xdist workers share it) and
marked complete only after ``pip install`` succeeded, so a broken install is retried. A test
then runs a script with that interpreter (``run_client_script``), which talks to the server
over 127.0.0.1 and prints one JSON document on stdout.

KServe's SDK (0.21) resolves beside the server's pins, so it is in the ``test`` extra; its
tests still run it in a subprocess of the test venv's interpreter, because ``kserve`` and
``tritonclient.grpc`` register the same protobuf message names and cannot share a process.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import tempfile
import venv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

MLSERVER = "mlserver==1.7.1"  # its codecs (mlserver.codecs) encode and decode V2 requests
INSTALL_TIMEOUT = 600  # seconds; a fresh install takes ~30 s with a warm pip cache


def venvs_root() -> Path:
    """Where the client venvs live (kept between test sessions)."""
    configured = os.environ.get("MININN_CLIENT_VENVS")
    return Path(configured) if configured else Path(tempfile.gettempdir()) / "mininn-client-venvs"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def client_python(requirement: str) -> Path:
    """The interpreter of a venv holding ``requirement`` (created on first use).

    Skips the calling test when the package index cannot be reached (no network); any
    other install failure fails it with pip's output.
    """
    python_tag = f"py{sys.version_info.major}{sys.version_info.minor}"
    folder = venvs_root() / f"{requirement.replace('==', '-')}-{python_tag}"
    python, done = folder / "bin" / "python", folder / ".installed"
    with _locked(folder.with_suffix(".lock")):
        if done.exists() and done.read_text() == requirement:
            return python
        venv.EnvBuilder(clear=True, with_pip=True).create(folder)
        result = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", requirement],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
        )
        if result.returncode != 0:
            output = result.stdout + result.stderr
            if _looks_offline(output):
                pytest.skip(f"cannot install {requirement} (no network?): {output[-300:]}")
            raise RuntimeError(f"pip install {requirement} failed:\n{output}")
        done.write_text(requirement)
    return python


def _looks_offline(pip_output: str) -> bool:
    markers = ("Temporary failure in name resolution", "Network is unreachable", "Failed to establish")
    return any(marker in pip_output for marker in markers) or "No matching distribution" in pip_output


def run_client_script(python: Path, script: str, *args: str, timeout: float = 120) -> Any:
    """Run ``script`` with ``python`` and return the JSON document it printed last."""
    result = subprocess.run(
        [str(python), "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
    )
    if result.returncode != 0:
        raise AssertionError(f"client script failed ({result.returncode}):\n{result.stderr[-4000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])
