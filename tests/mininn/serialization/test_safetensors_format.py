"""safetensors checkpoints: round trips, interop with the safetensors package and torch, bad headers."""

import io
import json
import struct

import numpy as np
import pytest
import safetensors.numpy

import mininn
from mininn.serialization import CheckpointError, load, load_metadata, save

ml_dtypes = pytest.importorskip("ml_dtypes")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
SHAPES = [(), (0,), (3,), (2, 3, 4)]


def _array(dtype_name, shape, seed=0):
    rng = np.random.default_rng(seed)
    values = np.asarray(rng.standard_normal(shape) * 50)
    return values.astype(mininn._dtype.as_dtype(dtype_name).np)


def _header_file(header, data=b""):
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


@pytest.mark.parametrize("as_path", [True, False], ids=["path", "fileobj"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_and_shape_round_trips(tmp_path, dtype, as_path):
    sd = {f"t{i}": _array(dtype, shape, i) for i, shape in enumerate(SHAPES)}
    target = tmp_path / "m.safetensors" if as_path else io.BytesIO()
    save(sd, target)
    if not as_path:
        target.seek(0)
    out = load(target)
    assert set(out) == set(sd)
    for key, expected in sd.items():
        assert isinstance(out[key], mininn.Tensor)
        assert out[key].dtype.name == dtype and tuple(out[key].shape) == expected.shape
        np.testing.assert_array_equal(out[key].numpy(), expected)
        assert out[key].numpy().flags.writeable


def test_tensors_parameters_and_views_are_saved_as_plain_tensors(tmp_path):
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    sd = {
        "t": mininn.tensor([1.0, 2.0], requires_grad=True),
        "transposed": base.T,
        "view": mininn.from_numpy(base[1]),
    }
    save(sd, tmp_path / "m.safetensors")
    out = load(tmp_path / "m.safetensors")
    np.testing.assert_array_equal(out["transposed"].numpy(), base.T)
    np.testing.assert_array_equal(out["view"].numpy(), base[1])
    assert not out["t"].requires_grad


def test_parameter_is_saved_as_its_data(tmp_path):
    nn = pytest.importorskip("mininn.nn")
    p = nn.Parameter(mininn.ones(2, 2))
    save({"p": p}, tmp_path / "p.safetensors")
    out = load(tmp_path / "p.safetensors")["p"]
    assert type(out) is mininn.Tensor and not out.requires_grad
    np.testing.assert_array_equal(out.numpy(), np.ones((2, 2), np.float32))


def test_metadata_round_trips_and_reads_without_tensors(tmp_path):
    meta = {"mininn.architecture": "resnet18", "mininn.config": json.dumps({"num_classes": 10})}
    save({"w": np.ones(2, np.float32)}, tmp_path / "m.safetensors", metadata=meta)
    assert load_metadata(tmp_path / "m.safetensors") == meta
    with safetensors.safe_open(tmp_path / "m.safetensors", framework="numpy") as f:
        assert f.metadata() == meta
    save({"w": np.ones(2, np.float32)}, tmp_path / "plain.safetensors")
    assert load_metadata(tmp_path / "plain.safetensors") == {}


def test_files_written_by_the_safetensors_package_load(tmp_path):
    arrays = {"a": _array("float32", (3, 2)), "b": _array("int64", (4,)), "c": _array("bfloat16", (2, 2))}
    safetensors.numpy.save_file(arrays, tmp_path / "pkg.safetensors", metadata={"k": "v"})
    out = load(tmp_path / "pkg.safetensors")
    for key, expected in arrays.items():
        np.testing.assert_array_equal(out[key].numpy(), expected)
    assert load_metadata(tmp_path / "pkg.safetensors") == {"k": "v"}


@pytest.mark.parametrize("as_path", [True, False], ids=["path", "fileobj"])
def test_tensors_load_in_the_order_of_their_bytes_as_safetensors_load_file_returns_them(tmp_path, as_path):
    # header order z, b, a; sorted order a, b, z (what safe_open(...).keys() lists); data order b, a, z
    header = {
        "z": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]},
        "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
        "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]},
    }
    path = tmp_path / "m.safetensors"
    path.write_bytes(_header_file(header, np.array([1, 2, 3], dtype="<f4").tobytes()))
    expected = safetensors.numpy.load_file(path)
    out = load(path if as_path else io.BytesIO(path.read_bytes()))
    assert list(out) == list(expected) == ["b", "a", "z"]
    assert {key: t.item() for key, t in out.items()} == {"b": 1.0, "a": 2.0, "z": 3.0}


def test_files_written_by_the_safetensors_package_load_in_its_order(tmp_path):
    arrays = {"b": _array("float32", (2,)), "a": _array("float64", (3,)), "0.w": _array("float16", (1,))}
    path = tmp_path / "pkg.safetensors"
    safetensors.numpy.save_file(arrays, path)
    assert list(load(path)) == list(safetensors.numpy.load_file(path))


def test_files_written_by_safetensors_torch_load(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file

    tensors = {
        "w": torch.randn(4, 3),
        "h": torch.randn(5).half(),
        "bf": torch.randn(2, 3).bfloat16(),
        "i": torch.arange(6, dtype=torch.int32).view(2, 3),
        "mask": torch.tensor([True, False]),
    }
    save_file(tensors, tmp_path / "torch.safetensors", metadata={"format": "pt"})
    out = load(tmp_path / "torch.safetensors")
    for key, t in tensors.items():
        expected = t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
        np.testing.assert_array_equal(out[key].numpy().astype(expected.dtype), expected)
        assert out[key].dtype.name == str(t.dtype).removeprefix("torch.")


def test_mininn_files_load_in_safetensors_torch(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file

    sd = {"w": mininn.randn(3, 2), "bf": mininn.ones(4, dtype=mininn.bfloat16), "n": np.arange(3)}
    save(sd, tmp_path / "m.safetensors")
    back = load_file(tmp_path / "m.safetensors")
    np.testing.assert_array_equal(back["w"].numpy(), sd["w"].numpy())
    assert back["bf"].dtype == torch.bfloat16 and back["bf"].float().sum().item() == 4.0
    np.testing.assert_array_equal(back["n"].numpy(), np.arange(3))


def test_save_refuses_non_flat_or_non_tensor_values_naming_the_key(tmp_path):
    with pytest.raises(CheckpointError, match="safetensors stores only tensors, but 'epoch' is int"):
        save({"w": np.ones(1), "epoch": 3}, tmp_path / "x.safetensors")
    with pytest.raises(CheckpointError, match="stores a flat dict of tensors, got list"):
        save([np.ones(1)], tmp_path / "x.safetensors")
    with pytest.raises(CheckpointError, match="keys must be strings, got 3"):
        save({3: np.ones(1)}, tmp_path / "x.safetensors")
    with pytest.raises(CheckpointError, match=r"cannot save 'c': unsupported dtype complex64"):
        save({"c": np.ones(2, np.complex64)}, tmp_path / "x.safetensors")
    with pytest.raises(CheckpointError, match="metadata must map str to str, got 'n': 1"):
        save({"w": np.ones(1)}, tmp_path / "x.safetensors", metadata={"n": 1})
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (struct.pack("<Q", 2**64 - 1) + b"{}", "exceeds the limit"),
        (struct.pack("<Q", 50) + b"{}", "truncated file: safetensors header length 50 exceeds the 2 bytes"),
        (struct.pack("<Q", 4) + b"{x:1", "not valid JSON"),
        (struct.pack("<Q", 2) + b"[]", "unrecognized checkpoint format"),
        (
            _header_file({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "x": 1}, b"\0" * 4),
            "'x' must be an object",
        ),
        (
            _header_file({"w": {"dtype": "F8_E4M3", "shape": [1], "data_offsets": [0, 1]}}, b"\0"),
            "unsupported dtype 'F8_E4M3'",
        ),
        (
            _header_file({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4),
            "invalid shape",
        ),
        (
            _header_file({"w": {"dtype": "F32", "shape": [True], "data_offsets": [0, 4]}}, b"\0" * 4),
            "invalid shape",
        ),
        (
            _header_file({"w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}}, b"\0" * 8),
            "invalid data_offsets",
        ),
        (
            _header_file({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8),
            r"shape \(3,\) of F32 needs 12 bytes but data_offsets \[0, 8\] span 8",
        ),
        (
            _header_file(
                {
                    "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                    "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]},
                },
                b"\0" * 12,
            ),
            "'a' and 'b' overlap at data offset 4",
        ),
        (
            _header_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8),
            "data bytes 0..4 belong to no tensor",
        ),
        (
            _header_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 9),
            "5 bytes after the last tensor",
        ),
        (
            _header_file({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 9),
            r"data_offsets \[0, 16\] exceed the 9 data bytes",
        ),
        (_header_file({"__metadata__": {"n": 1}}), r"__metadata__\['n'\] must be a string"),
        (struct.pack("<Q", 9) + b'{"a":NaN}', "non-JSON constant NaN"),
        (struct.pack("<Q", 15) + b'{"a":1,"a":2}  ', "repeats the key 'a'"),
    ],
)
@pytest.mark.parametrize("as_path", [True, False], ids=["path", "fileobj"])
def test_bad_headers_raise_checkpoint_error_naming_the_problem(tmp_path, data, message, as_path):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(data)
    with pytest.raises(CheckpointError, match=message):
        load(path if as_path else io.BytesIO(data))


def test_bfloat16_without_ml_dtypes_names_the_package(tmp_path, monkeypatch):
    save({"bf": mininn.ones(2, dtype=mininn.bfloat16)}, tmp_path / "bf.safetensors")
    monkeypatch.setattr(mininn._dtype, "bfloat16", None)
    with pytest.raises(CheckpointError, match="'bf' is bfloat16, which needs the ml_dtypes package"):
        load(tmp_path / "bf.safetensors")
