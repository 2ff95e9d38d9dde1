"""Repository writes: atomic model.json, version numbers claimed by rename, deletion, stale leftovers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from _app_support import REPO_ROOT, mlp_weights, write_model

from app.errors import BadRequestError, NotFoundError
from app.store.repository import ModelRepository, Staging, file_identity
from mininn.serialization import load, load_metadata, write_safetensors


def _stage(repository: ModelRepository, name: str, seed: int) -> Staging:
    staging = repository.new_staging(name)
    write_safetensors(staging.path / "weights.safetensors", mlp_weights(seed), {"seed": str(seed)})
    return staging


def test_write_spec_creates_then_replaces_model_json_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    repository = ModelRepository(tmp_path / "repo")
    assert repository.write_spec("m", b'{"architecture": "mlp"}') is True
    assert repository.write_spec("m", b'{"architecture": "lenet5"}') is False
    assert sorted(os.listdir(tmp_path / "repo" / "m")) == ["model.json"]
    assert json.loads((tmp_path / "repo" / "m" / "model.json").read_text()) == {"architecture": "lenet5"}


def test_a_reader_always_sees_a_whole_model_json_while_it_is_replaced(tmp_path: Path) -> None:
    repository = ModelRepository(tmp_path)
    documents = [json.dumps({"architecture": "mlp", "description": f"{i}" * 5000}).encode() for i in range(9)]
    repository.write_spec("m", documents[0])
    seen, stop = set(), threading.Event()

    def read() -> None:
        while not stop.is_set():
            seen.add((tmp_path / "m" / "model.json").read_bytes())

    reader = threading.Thread(target=read)
    reader.start()
    for i in range(200):
        repository.write_spec("m", documents[i % 9])
    stop.set()
    reader.join()
    assert seen <= set(documents)


def test_commits_get_the_next_numbers_and_skip_every_numbered_entry(tmp_path: Path) -> None:
    write_model(tmp_path, "m", {1: mlp_weights(1)})
    repository = ModelRepository(tmp_path)
    (tmp_path / "m" / "7").write_text("not a version, but its number is taken")
    with _stage(repository, "m", 2) as staging:
        assert repository.commit_version("m", staging) == 8
    with _stage(repository, "m", 3) as staging:
        assert repository.commit_version("m", staging) == 9
    assert repository.versions("m") == [1, 8, 9]
    assert load_metadata(tmp_path / "m" / "9" / "weights.safetensors")["seed"] == "3"
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["1", "7", "8", "9", "model.json"]


def test_racing_commits_get_distinct_versions_and_none_is_lost(tmp_path: Path) -> None:
    write_model(tmp_path, "m", {})
    repository = ModelRepository(tmp_path)
    stagings = [_stage(repository, "m", seed) for seed in range(16)]
    barrier = threading.Barrier(len(stagings))
    numbers: dict[int, int] = {}

    def commit(seed: int) -> None:
        barrier.wait()
        numbers[seed] = repository.commit_version("m", stagings[seed])

    threads = [threading.Thread(target=commit, args=(seed,)) for seed in range(len(stagings))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for staging in stagings:
        staging.close()
    assert sorted(numbers.values()) == list(range(1, 17))
    for seed, number in numbers.items():
        stored = load(tmp_path / "m" / str(number) / "weights.safetensors")
        np.testing.assert_array_equal(stored["0.weight"].numpy(), mlp_weights(seed)["0.weight"])
    names = sorted(p.name for p in (tmp_path / "m").iterdir())
    assert names == sorted([*map(str, range(1, 17)), "model.json"])


def test_a_staging_folder_that_is_not_committed_goes_with_its_lock(tmp_path: Path) -> None:
    write_model(tmp_path, "m", {1: mlp_weights(1)})
    repository = ModelRepository(tmp_path)
    with _stage(repository, "m", 2) as staging:
        assert staging.path.is_dir() and staging.lock_path.is_file()
        assert repository.versions("m") == [1]  # a staging folder is never a version
        assert repository.model_names() == ["m"]
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["1", "model.json"]


def test_delete_version_removes_it_and_unknown_versions_are_404(tmp_path: Path) -> None:
    write_model(tmp_path, "m", {1: mlp_weights(1), 2: mlp_weights(2)})
    repository = ModelRepository(tmp_path)
    repository.delete_version("m", 2)
    assert repository.versions("m") == [1]
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["1", "model.json"]
    with pytest.raises(NotFoundError, match="^model 'm' has no version 2$"):
        repository.delete_version("m", 2)


def test_a_reused_version_number_has_a_new_identity(tmp_path: Path) -> None:
    write_model(tmp_path, "m", {1: mlp_weights(1)})
    repository = ModelRepository(tmp_path)
    before = repository.disk_state("m")
    assert before is not None and before.numbers == [1]
    repository.delete_version("m", 1)
    with _stage(repository, "m", 5) as staging:
        assert repository.commit_version("m", staging) == 1
    after = repository.disk_state("m")
    assert after is not None and after.numbers == [1]
    assert after != before and after.identity_of(1) != before.identity_of(1)
    repository.write_spec("m", b'{"architecture": "mlp"}')
    assert repository.disk_state("m").spec != after.spec  # type: ignore[union-attr]
    assert repository.disk_state("gone") is None


_KILLED_WRITER = """
import os, signal, sys
from app.store.repository import ModelRepository
staging = ModelRepository(sys.argv[1]).new_staging("m")
(staging.path / "upload.part").write_bytes(b"half an upload")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_clean_stale_removes_what_dead_writers_left_and_keeps_live_ones(tmp_path: Path) -> None:
    write_model(tmp_path, "m", {1: mlp_weights(1)})
    repository = ModelRepository(tmp_path)
    folder = tmp_path / "m"
    killed = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(tmp_path)], cwd=REPO_ROOT)
    assert killed.returncode == -9
    dead = sorted(p.name for p in folder.iterdir() if p.name.startswith(".upload-"))
    assert len(dead) == 2  # its folder and its lock file
    (folder / ".deleted-3-0123").mkdir()
    (folder / ".model.json.abcd.tmp").write_text("{")
    old = time.time() - 120
    for name in [*dead, ".model.json.abcd.tmp"]:
        os.utime(folder / name, (old, old))
    with repository.new_staging("m") as live:
        os.utime(live.lock_path, (old, old))  # old, but its lock is held: kept
        removed = {p.name for p in repository.clean_stale()}
        assert removed == {*dead, ".deleted-3-0123", ".model.json.abcd.tmp"}
        assert live.path.is_dir() and live.lock_path.is_file()
    assert sorted(p.name for p in folder.iterdir()) == ["1", "model.json"]


def test_a_young_unlocked_lock_file_is_kept(tmp_path: Path) -> None:
    write_model(tmp_path, "m", {1: mlp_weights(1)})
    (tmp_path / "m" / ".upload-young.lock").touch()  # its writer may be about to lock it
    assert ModelRepository(tmp_path).clean_stale() == []
    assert (tmp_path / "m" / ".upload-young.lock").exists()


@pytest.mark.parametrize("name", ["..", "../x", "/etc", "a/b", "a\x00b", "x" * 65, "", ".hidden"])
def test_writes_refuse_bad_names_before_building_a_path(tmp_path: Path, name: str) -> None:
    repository = ModelRepository(tmp_path / "repo")
    for write in (
        lambda: repository.write_spec(name, b"{}"),
        lambda: repository.new_staging(name),
        lambda: repository.delete_version(name, 1),
        lambda: repository.disk_state(name),
    ):
        with pytest.raises(BadRequestError, match="^invalid model name "):
            write()
    assert list(tmp_path.iterdir()) == []


def test_file_identity_is_none_for_a_missing_file(tmp_path: Path) -> None:
    (tmp_path / "w.safetensors").write_bytes(b"x")
    assert file_identity(tmp_path / "w.safetensors") is not None
    assert file_identity(tmp_path / "nope") is None
