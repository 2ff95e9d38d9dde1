"""deploy/docker/seed_volume.py: the Kubernetes init container's copy of the image's demo models."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from _deploy_support import DOCKER_DIR, load_script

seed_volume = load_script("seed_volume")


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """An image repository with two models (a hidden folder is not a model)."""
    root = tmp_path / "image-models"
    for name in ("digits", "minilm"):
        (root / name / "1").mkdir(parents=True)
        (root / name / "model.json").write_text(f'{{"name": "{name}"}}')
        (root / name / "1" / "weights.safetensors").write_bytes(name.encode() * 1000)
    (root / ".cache").mkdir()
    return root


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_an_empty_volume_gets_every_model_and_the_marker(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "volume"
    assert seed_volume.seed_volume(source, target) == ["digits", "minilm"]
    copied = tree(target)
    assert copied.pop(seed_volume.MARKER) == b""
    assert copied == {k: v for k, v in tree(source).items() if not k.startswith(".")}


def test_a_marked_volume_is_never_touched_again(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "volume"
    seed_volume.seed_volume(source, target)
    (target / "minilm").rename(tmp_path / "deleted-by-the-user")
    assert seed_volume.seed_volume(source, target) == []
    assert sorted(p.name for p in target.iterdir()) == [seed_volume.MARKER, "digits"]


def test_models_already_in_the_volume_are_kept(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "volume"
    (target / "digits").mkdir(parents=True)
    (target / "digits" / "model.json").write_text("uploaded by a user")
    assert seed_volume.seed_volume(source, target) == ["minilm"]
    assert (target / "digits" / "model.json").read_text() == "uploaded by a user"


def test_concurrent_seeders_each_model_lands_once_and_no_staging_is_left(
    source: Path, tmp_path: Path
) -> None:
    target = tmp_path / "volume"
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: seed_volume.seed_volume(source, target), range(4)))
    assert sorted(name for copied in results for name in copied) == ["digits", "minilm"]
    assert sorted(p.name for p in target.iterdir()) == [seed_volume.MARKER, "digits", "minilm"]


def test_the_command_line(source: Path, tmp_path: Path) -> None:
    script = str(DOCKER_DIR / "seed_volume.py")
    result = subprocess.run(
        [sys.executable, script, str(source), str(tmp_path / "v")], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0
    assert result.stderr == f"seed_volume: seeded {tmp_path / 'v'} with digits, minilm\n"
    usage = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=30)
    assert (usage.returncode, usage.stderr) == (2, "usage: seed_volume.py SOURCE TARGET\n")
