"""deploy/docker/runtime_wheels.py: the wheels the image installs are exactly the runtime closure."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tomllib
from _deploy_support import DOCKER_DIR, REPO_ROOT, load_script

pytest.importorskip("packaging")
runtime_wheels = load_script("runtime_wheels")


def make_wheel(folder: Path, name: str, requires: list[str], version: str = "1.0") -> Path:
    """A minimal wheel whose METADATA lists ``requires``."""
    stem = f"{name.replace('-', '_')}-{version}"
    path = folder / f"{stem}-py3-none-any.whl"
    metadata = "\n".join(
        ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
        + [f"Requires-Dist: {line}" for line in requires]
    )
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{stem}.dist-info/METADATA", metadata + "\n")
    return path


@pytest.fixture
def wheel_folder(tmp_path: Path) -> Path:
    """A `pip wheel` folder shaped like the real one."""
    folder = tmp_path / "all"
    folder.mkdir()
    make_wheel(folder, "mininn-serve", ["numpy>=1.26", "uvicorn[standard]>=0.29", "tokenizers>=0.15"])
    make_wheel(folder, "numpy", [])
    make_wheel(
        folder,
        "uvicorn",
        [
            "click>=7",
            "h11>=0.8",
            "httptools>=0.6; extra == 'standard'",
            "watchfiles>=0.13; extra == 'standard'",
            "websockets>=10.4; extra == 'standard'",
            "colorama>=0.4; sys_platform == 'win32' and extra == 'standard'",
        ],
    )
    make_wheel(folder, "click", ["colorama; platform_system == 'Windows'"])
    make_wheel(folder, "h11", [])
    make_wheel(folder, "httptools", [])
    make_wheel(folder, "watchfiles", ["anyio>=3"])
    make_wheel(folder, "anyio", [])
    make_wheel(folder, "websockets", [])
    make_wheel(folder, "tokenizers", ["huggingface-hub>=0.16,<2.0", "pytest; extra == 'testing'"])
    make_wheel(folder, "huggingface-hub", ["filelock", "fsspec"])
    make_wheel(folder, "filelock", [])
    make_wheel(folder, "fsspec", [])
    make_wheel(folder, "pytest", [])
    return folder


def test_the_closure_follows_extras_and_markers_and_leaves_out_the_hub(
    wheel_folder: Path, tmp_path: Path
) -> None:
    result = subprocess.run(
        [sys.executable, str(DOCKER_DIR / "runtime_wheels.py"), str(wheel_folder), str(tmp_path / "runtime")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    names = sorted(p.name.split("-")[0] for p in (tmp_path / "runtime").glob("*.whl"))
    assert names == ["click", "h11", "httptools", "mininn_serve", "numpy", "tokenizers", "uvicorn"]
    assert result.stdout.splitlines() == sorted(p.name for p in (tmp_path / "runtime").glob("*.whl"))


def test_a_missing_wheel_stops_the_build_naming_it(wheel_folder: Path, tmp_path: Path) -> None:
    (wheel_folder / "h11-1.0-py3-none-any.whl").unlink()
    result = subprocess.run(
        [sys.executable, str(DOCKER_DIR / "runtime_wheels.py"), str(wheel_folder), str(tmp_path / "runtime")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr == "runtime_wheels: no wheel for requirement 'h11' in the folder\n"


def test_only_requirements_of_the_project_are_left_out() -> None:
    declared = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {requirement.split(">")[0].split("[")[0].split("=")[0].strip() for requirement in declared}
    assert not names & set(runtime_wheels.LEFT_OUT)  # never a direct dependency of the service
    assert set(runtime_wheels.LEFT_OUT) == {"huggingface-hub", "watchfiles", "websockets"}
