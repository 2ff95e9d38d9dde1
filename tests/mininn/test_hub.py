"""``mininn.hub`` and ``mininn.utils.model_zoo``: torch's hub cache read locally; downloads refused."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mininn
import mininn.hub as mhub
import mininn.utils.model_zoo as mzoo
from mininn.torch_alias import load_code

torch = pytest.importorskip("torch")
torch_hub = pytest.importorskip("torch.hub")

URL = "https://download.example.org/models/tiny-1a2b3c4d.pth?dl=1"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``TORCH_HOME`` for both libraries, with no ``set_dir`` in effect."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch-home"))
    monkeypatch.setattr(mhub, "_hub_dir", None)
    monkeypatch.setattr(torch_hub, "_hub_dir", None)
    return tmp_path / "torch-home"


def state_dict() -> dict[str, Any]:
    torch.manual_seed(0)
    return torch.nn.Linear(3, 2).state_dict()


def cache(path: Path, obj: Any, **save: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(obj, path, **save)
    return path


def assert_same_state(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    assert list(ours) == list(theirs)
    for key, value in theirs.items():
        assert isinstance(ours[key], mininn.Tensor)
        np.testing.assert_array_equal(ours[key].numpy(), value.numpy(), err_msg=key)


# -- where the cache is -----------------------------------------------------------------------------------


@pytest.mark.parametrize("env", [{"TORCH_HOME": "{tmp}/th"}, {"XDG_CACHE_HOME": "{tmp}/xdg"}, {},
                                 {"TORCH_HOME": "~/th"}])
def test_get_dir_follows_torchs_environment(env: dict[str, str], tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TORCH_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value.format(tmp=tmp_path))
    monkeypatch.setattr(mhub, "_hub_dir", None)
    monkeypatch.setattr(torch_hub, "_hub_dir", None)
    assert mhub.get_dir() == torch_hub.get_dir()


def test_set_dir_is_used_from_then_on_as_torchs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mhub, "_hub_dir", None)
    monkeypatch.setattr(torch_hub, "_hub_dir", None)
    mhub.set_dir("~/somewhere/hub")
    torch_hub.set_dir("~/somewhere/hub")
    assert mhub.get_dir() == torch_hub.get_dir() == os.path.expanduser("~/somewhere/hub")


# -- reading the cache ------------------------------------------------------------------------------------


def test_a_cached_checkpoint_loads_as_torch_loads_it(home: Path) -> None:
    cache(home / "hub" / "checkpoints" / "tiny-1a2b3c4d.pth", state_dict())
    theirs = torch_hub.load_state_dict_from_url(URL, progress=False, check_hash=True)
    assert_same_state(mhub.load_state_dict_from_url(URL, progress=False, check_hash=True), theirs)
    assert mzoo.load_url is mhub.load_state_dict_from_url
    assert_same_state(mzoo.load_url(URL), theirs)


@pytest.mark.parametrize("map_location", ["cpu", "device", "lambda", "dict"])
def test_map_location_in_torchs_forms_loads_onto_the_cpu(home: Path, map_location: str) -> None:
    cache(home / "hub" / "checkpoints" / "tiny-1a2b3c4d.pth", state_dict())
    ours = {"cpu": "cpu", "device": mininn.device("cpu"), "lambda": lambda storage, loc: storage,
            "dict": {"cuda:0": "cpu"}}[map_location]
    loaded = mhub.load_state_dict_from_url(URL, map_location=ours)
    assert_same_state(loaded, state_dict())
    assert all(t.device == mininn.device("cpu") for t in loaded.values())


def test_model_dir_and_file_name_choose_the_file_as_in_torch(home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "weights"
    cache(folder / "renamed.pt", state_dict())
    theirs = torch_hub.load_state_dict_from_url(URL, model_dir=str(folder), file_name="renamed.pt")
    ours = mhub.load_state_dict_from_url(URL, model_dir=str(folder), file_name="renamed.pt")
    assert_same_state(ours, theirs)
    assert not (home / "hub").exists()


@pytest.mark.filterwarnings("ignore:Falling back to the old format:FutureWarning")  # torch's, on loading
def test_an_old_style_zipped_checkpoint_loads_as_torch_loads_it(home: Path) -> None:
    legacy = io.BytesIO()
    torch.save(state_dict(), legacy, _use_new_zipfile_serialization=False)
    path = home / "hub" / "checkpoints" / "old.zip"
    path.parent.mkdir(parents=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("old.pth", legacy.getvalue())
    url = "https://example.org/old.zip"
    assert_same_state(mhub.load_state_dict_from_url(url),
                      torch_hub.load_state_dict_from_url(url, weights_only=True))


def test_a_cached_safetensors_or_npz_file_loads_too(home: Path) -> None:
    folder = home / "hub" / "checkpoints"
    folder.mkdir(parents=True)
    weights = {"w": mininn.arange(6).reshape(2, 3).float()}
    mininn.save(weights, folder / "w.safetensors")
    mininn.save({"b": mininn.ones(2)}, folder / "b.npz")
    assert mhub.load_state_dict_from_url("https://x/w.safetensors")["w"].tolist() == weights["w"].tolist()
    assert mhub.load_state_dict_from_url("https://x/b.npz")["b"].tolist() == [1.0, 1.0]


# -- what is refused --------------------------------------------------------------------------------------


def test_a_file_missing_from_the_cache_is_refused_and_nothing_is_created(home: Path) -> None:
    with pytest.raises(mhub.DownloadRefusedError) as info:
        mhub.load_state_dict_from_url(URL)
    expected = os.path.join(str(home), "hub", "checkpoints", "tiny-1a2b3c4d.pth")
    message = str(info.value)
    assert URL in message and expected in message
    assert "mininn does not download" in message and "upload the weights" in message
    assert not home.exists()
    with pytest.raises(mhub.DownloadRefusedError, match="does not download"):
        mzoo.load_url(URL, model_dir=str(home / "elsewhere"))


def test_a_cached_file_that_is_no_checkpoint_is_a_checkpoint_error(home: Path) -> None:
    folder = home / "hub" / "checkpoints"
    folder.mkdir(parents=True)
    (folder / "tiny-1a2b3c4d.pth").write_bytes(b"<html>not found</html>")
    with pytest.raises(mininn.serialization.CheckpointError):
        mhub.load_state_dict_from_url(URL)


@pytest.mark.parametrize("call", [
    lambda: mhub.load("pytorch/vision", "resnet18", weights=None),
    lambda: mhub.list("pytorch/vision"),
    lambda: mhub.help("pytorch/vision", "resnet18"),
])
def test_hub_code_is_never_fetched(call: Any) -> None:
    with pytest.raises(mhub.DownloadRefusedError, match="'pytorch/vision', which mininn does not do") as info:
        call()
    assert "model.py" in str(info.value) and "state dict" in str(info.value)


def test_download_url_to_file_is_refused_and_names_the_destination(tmp_path: Path) -> None:
    with pytest.raises(mhub.DownloadRefusedError, match="put the file at .*w.pth"):
        mhub.download_url_to_file("https://x/w.pth", str(tmp_path / "w.pth"))
    assert not (tmp_path / "w.pth").exists()


def test_the_signatures_are_torchs() -> None:
    import inspect

    for ours, theirs in [(mhub.load_state_dict_from_url, torch_hub.load_state_dict_from_url),
                         (mhub.load, torch_hub.load), (mhub.get_dir, torch_hub.get_dir),
                         (mhub.set_dir, torch_hub.set_dir), (mhub.list, torch_hub.list),
                         (mhub.help, torch_hub.help),
                         (mhub.download_url_to_file, torch_hub.download_url_to_file)]:
        ps, qs = inspect.signature(ours).parameters.values(), inspect.signature(theirs).parameters.values()
        assert [(p.name, p.kind, p.default) for p in ps] == [(q.name, q.kind, q.default) for q in qs]


# -- served code --------------------------------------------------------------------------------------------

MODEL_FILE = '''
import torch
import torch.utils.model_zoo as model_zoo
from torch.hub import load_state_dict_from_url


def pretrained():
    net = torch.nn.Linear(3, 2)
    net.load_state_dict(load_state_dict_from_url("https://example.org/tiny-1a2b3c4d.pth"))
    return net, model_zoo.load_url, torch.hub.get_dir()
'''


def test_model_code_reads_the_hub_cache_through_mininn(home: Path, tmp_path: Path) -> None:
    cache(home / "hub" / "checkpoints" / "tiny-1a2b3c4d.pth", state_dict())
    (tmp_path / "model.py").write_text(MODEL_FILE)
    net, load_url, hub_dir = load_code(tmp_path, "model.py").pretrained()
    np.testing.assert_array_equal(net.weight.detach().numpy(), state_dict()["weight"].numpy())
    assert load_url is mhub.load_state_dict_from_url and hub_dir == str(home / "hub")
