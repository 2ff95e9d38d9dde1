"""The public surface of mininn.serialization: names, format choice and detection, files, devices."""

import inspect
import io
import os
import tarfile

import numpy as np
import pytest

import mininn
import mininn.serialization as serialization
from mininn.serialization import CheckpointError, detect_format, load, load_metadata, save

SD = {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([1, 2], np.int64)}


def test_public_api_is_pinned():
    assert sorted(serialization.__all__) == sorted(
        [
            "FORMATS",
            "Checkpoint",
            "CheckpointError",
            "Entry",
            "detect_format",
            "load",
            "load_metadata",
            "open_checkpoint",
            "save",
            "write_safetensors",
        ]
    )
    assert serialization.FORMATS == ("safetensors", "npz", "pt")
    assert issubclass(CheckpointError, ValueError)
    assert list(inspect.signature(save).parameters) == ["obj", "f", "format", "metadata"]
    assert list(inspect.signature(load).parameters) == ["f", "map_location", "device", "weights_only"]


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("m.safetensors", "safetensors"),
        ("m.npz", "npz"),
        ("m.pt", "pt"),
        ("m.PTH", "pt"),
        ("m.bin", "pt"),
        ("m.ckpt", "safetensors"),
        ("noext", "safetensors"),
    ],
)
def test_save_picks_the_format_from_the_suffix(tmp_path, name, fmt):
    save(SD, tmp_path / name)
    assert detect_format(tmp_path / name) == fmt
    np.testing.assert_array_equal(load(str(tmp_path / name))["w"].numpy(), SD["w"])


def test_format_argument_wins_over_the_suffix_and_load_ignores_the_name(tmp_path):
    save(SD, tmp_path / "really_npz.pt", format="npz")
    assert detect_format(tmp_path / "really_npz.pt") == "npz"
    np.testing.assert_array_equal(load(tmp_path / "really_npz.pt")["b"].numpy(), SD["b"])
    buf = io.BytesIO()
    save(SD, buf)
    assert detect_format(io.BytesIO(buf.getvalue())) == "safetensors"
    with pytest.raises(
        ValueError, match="unknown checkpoint format 'onnx'; choose one of safetensors, npz, pt"
    ):
        save(SD, tmp_path / "x", format="onnx")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty file"),
        (b"hello, I am a text file", "unrecognized checkpoint format"),
        (b"\x93NUMPY\x01\x00", "supported formats: safetensors, npz"),
        (b"(dp0\nS'a'\np1\nI1\ns.", "unrecognized checkpoint format"),  # protocol-0 pickle
    ],
)
def test_unknown_formats_name_the_supported_ones(tmp_path, data, message):
    path = tmp_path / "mystery.pt"
    path.write_bytes(data)
    with pytest.raises(CheckpointError, match=message):
        load(path)


def test_tar_format_torch_checkpoints_get_a_clear_error(tmp_path):
    with tarfile.open(tmp_path / "old.tar", "w") as tar:
        tar.add(__file__, arcname="pickle")
    with pytest.raises(
        CheckpointError, match=r"tar-format PyTorch checkpoints \(torch < 0.4\) are not supported"
    ):
        load(tmp_path / "old.tar")


def test_failed_save_keeps_the_previous_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "model.pt"
    save(SD, path)
    before = path.read_bytes()
    with pytest.raises(CheckpointError, match="object is not supported"):
        save({"w": SD["w"], "bad": object()}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.pt"]


def test_saved_files_get_ordinary_permissions(tmp_path):
    save(SD, tmp_path / "m.safetensors")
    (tmp_path / "plain").write_bytes(b"")
    assert (tmp_path / "m.safetensors").stat().st_mode == (tmp_path / "plain").stat().st_mode


def test_file_objects_are_read_from_their_current_position_and_may_not_seek(tmp_path):
    for fmt in serialization.FORMATS:
        buf = io.BytesIO()
        buf.write(b"junk before the checkpoint")
        start = buf.tell()
        save(SD, buf, format=fmt)
        buf.seek(start)
        np.testing.assert_array_equal(load(buf)["w"].numpy(), SD["w"])

        class Stream:
            def __init__(self, data):
                self._inner = io.BytesIO(data)

            def read(self, n=-1):
                return self._inner.read(n)

        buf.seek(start)
        np.testing.assert_array_equal(load(Stream(buf.read()))["w"].numpy(), SD["w"])


def test_load_rejects_arguments_of_the_wrong_kind(tmp_path):
    save(SD, tmp_path / "m.safetensors")
    with pytest.raises(TypeError, match="expected a path or a binary file object, got int"):
        load(3)
    with open(tmp_path / "m.safetensors") as text:
        with pytest.raises(TypeError, match="expected a path or a binary file object, got TextIOWrapper"):
            load(text)
    with pytest.raises(TypeError, match="map_location must be a device or a string"):
        load(tmp_path / "m.safetensors", map_location={"cuda:0": "cpu"})
    with pytest.raises(TypeError, match="give one"):
        load(tmp_path / "m.safetensors", map_location="cpu", device="cuda")
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing.safetensors")


def test_device_cpu_in_every_spelling_loads_cpu_tensors(tmp_path):
    save(SD, tmp_path / "m.pt")
    for kwargs in (
        {},
        {"device": "cpu"},
        {"map_location": "cpu"},
        {"device": mininn.device("cpu")},
        {"weights_only": True},
    ):
        out = load(tmp_path / "m.pt", **kwargs)
        assert out["w"].device == mininn.device("cpu")
        assert out["w"].numpy().flags.writeable


def test_load_metadata_is_empty_for_formats_without_it(tmp_path):
    save(SD, tmp_path / "m.pt")
    save(SD, tmp_path / "m.npz")
    assert load_metadata(tmp_path / "m.pt") == {} and load_metadata(tmp_path / "m.npz") == {}
    with pytest.raises(CheckpointError, match="unrecognized checkpoint format"):
        load_metadata(io.BytesIO(b"nonsense bytes here"))


@pytest.mark.parametrize("fmt", ["safetensors", "npz", "pt"])
def test_megabyte_tensors_round_trip_through_paths_and_file_objects(tmp_path, fmt):
    big = np.random.default_rng(0).standard_normal((3, 512, 1024)).astype(np.float32)  # 6 MiB
    sd = {"big": big, "view": big[1, ::2], "small": np.arange(5)}
    save(sd, tmp_path / "big.ckpt", format=fmt)
    with open(tmp_path / "big.ckpt", "rb") as fh:
        loaded = [
            load(tmp_path / "big.ckpt"),
            load(fh),
            load(io.BytesIO((tmp_path / "big.ckpt").read_bytes())),
        ]
    for out in loaded:
        for key, expected in sd.items():
            np.testing.assert_array_equal(out[key].numpy(), expected)
        out["big"][0, 0, 0] = 1.0  # writable, and private to this load
    assert load(tmp_path / "big.ckpt")["big"][0, 0, 0].item() == big[0, 0, 0]
