"""``pip install .`` into a fresh virtual environment gives a working ``mininn-serve``.

The new environment is created without pip and sees the test environment's
packages through a ``.pth`` line (so nothing is downloaded); our own package is
built from a copy of the source tree and installed for real (not editable), and
the test checks that it, not the source tree, is what runs.
"""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
import venv
from pathlib import Path

import httpx
import pytest
from _app_support import REPO_ROOT, run_server

pytestmark = pytest.mark.slow

SOURCES = ["pyproject.toml", "README.md", "app", "models", "mininn"]


def make_venv(folder: Path) -> Path:
    venv.EnvBuilder(with_pip=False).create(folder)
    python = folder / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    parent = sysconfig.get_paths()["purelib"]  # numpy, fastapi, pip, setuptools ... of this environment
    (Path(purelib) / "_test_parent_site.pth").write_text(parent + "\n")
    return python


def copy_sources(target: Path) -> Path:
    target.mkdir()
    for name in SOURCES:
        source = REPO_ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, target / name)
    return target


def test_pip_install_gives_a_mininn_serve_command_that_serves(tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    source = copy_sources(tmp_path / "src")
    install = subprocess.run(
        [
            python,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            str(source),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr
    where = subprocess.run(
        [python, "-c", "import app, models, mininn; print(app.__file__); print(models.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    ).stdout.split()
    assert all(path.startswith(str(tmp_path / "venv")) for path in where), where
    command = tmp_path / "venv" / "bin" / "mininn-serve"
    assert command.exists()
    with run_server(
        Path("model_repository"), tmp_path / "server.log", command=[str(command)], cwd=tmp_path
    ) as server:
        server.wait_ready(120)
        assert httpx.get(f"{server.base_url}/v2").json()["version"] == "0.1.0"
        index = httpx.post(f"{server.base_url}/v2/repository/index").json()
        assert ("digits", "READY") in [(row["name"], row["state"]) for row in index]
    assert (tmp_path / "model_repository" / "digits" / "1" / "weights.safetensors").is_file()
