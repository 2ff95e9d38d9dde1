"""NumPy .npz checkpoints: round trips, files from np.savez, bfloat16 and metadata, bad members."""

import io
import zipfile

import numpy as np
import pytest

import mininn
from mininn.serialization import CheckpointError, load, load_metadata, save

ml_dtypes = pytest.importorskip("ml_dtypes")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def _array(dtype_name, shape, seed=0):
    values = np.asarray(np.random.default_rng(seed).standard_normal(shape) * 50)
    return values.astype(mininn._dtype.as_dtype(dtype_name).np)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_and_shape_round_trips(tmp_path, dtype):
    sd = {f"t{i}": _array(dtype, shape, i) for i, shape in enumerate([(), (0, 2), (5,), (2, 3, 4)])}
    save(sd, tmp_path / "m.npz")
    out = load(tmp_path / "m.npz")
    assert list(out) == list(sd)
    for key, expected in sd.items():
        assert out[key].dtype.name == dtype and tuple(out[key].shape) == expected.shape
        np.testing.assert_array_equal(out[key].numpy(), expected)


def test_plain_files_from_numpy_savez_and_savez_compressed_load(tmp_path):
    arrays = {
        "layer.weight": _array("float32", (3, 4)),
        "layer.bias": _array("int64", (3,)),
        "fortran": np.asfortranarray(_array("float64", (3, 2))),
        "big_endian": np.arange(4, dtype=">i4"),
    }
    np.savez(tmp_path / "plain.npz", **arrays)
    np.savez_compressed(tmp_path / "packed.npz", **arrays)
    for name in ("plain.npz", "packed.npz"):
        out = load(tmp_path / name)
        for key, expected in arrays.items():
            np.testing.assert_array_equal(out[key].numpy(), expected)
        assert out["big_endian"].numpy().dtype == np.int32 and out["big_endian"].dtype is mininn.int32
        assert load_metadata(tmp_path / name) == {}


def test_mininn_npz_without_bfloat16_or_metadata_is_plain_numpy(tmp_path):
    save({"w": np.ones(3, np.float32)}, tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz", allow_pickle=False) as npz:
        assert npz.files == ["w"]


def test_bfloat16_and_metadata_ride_in_a_manifest_member(tmp_path):
    bf = _array("bfloat16", (2, 3))
    save({"bf": bf, "f": np.ones(2, np.float32)}, tmp_path / "m.npz", metadata={"mininn.architecture": "mlp"})
    assert load_metadata(tmp_path / "m.npz") == {"mininn.architecture": "mlp"}
    out = load(tmp_path / "m.npz")
    assert list(out) == ["bf", "f"] and out["bf"].dtype is mininn.bfloat16
    np.testing.assert_array_equal(out["bf"].numpy(), bf)
    with np.load(tmp_path / "m.npz", allow_pickle=False) as npz:  # still readable by numpy
        assert npz["bf"].dtype == np.uint16 and "__mininn__" in npz.files


def test_npz_save_refuses_the_reserved_key(tmp_path):
    with pytest.raises(CheckpointError, match="'__mininn__' is reserved"):
        save({"__mininn__": np.ones(1)}, tmp_path / "m.npz")


def _npz_with(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _npy(array):
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ({"w.npy": _npy(np.ones(2)), "notes.txt": b"hi"}, "neither a torch.save checkpoint"),
        ({"w.npy": b"not an npy file at all"}, "bad .npy header"),
        ({"w.npy": _npy(np.ones(4))[:-8]}, "needs 160 bytes but the archive declares 152"),
        ({"w.npy": _npy(np.ones(2, np.complex64))}, "unsupported dtype complex64"),
        ({"w.npy": _npy(np.array(["text"]))}, "unsupported dtype <U4"),
        ({"w.npy": _npy(np.ones(2, np.uint16))}, "unsupported dtype uint16"),
        ({"w.npy": _npy(np.ones(2)), "__mininn__.npy": _npy(np.array("{oops"))}, "is not valid JSON"),
        (
            {
                "w.npy": _npy(np.ones(2)),
                "__mininn__.npy": _npy(np.array('{"dtypes": {"w": "int4"}, "metadata": {}}')),
            },
            "declares unsupported dtypes",
        ),
        (
            {
                "w.npy": _npy(np.ones(2)),
                "__mininn__.npy": _npy(np.array('{"dtypes": {"w": "bfloat16"}, "metadata": {}}')),
            },
            "declared bfloat16 but stored as float64",
        ),
    ],
)
def test_bad_members_raise_checkpoint_error_naming_the_member(tmp_path, members, message):
    path = tmp_path / "bad.npz"
    path.write_bytes(_npz_with(members))
    with pytest.raises(CheckpointError, match=message):
        load(path)


def test_duplicate_and_encrypted_members_are_refused(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("w.npy", _npy(np.ones(2)))
        with pytest.warns(UserWarning, match="Duplicate name"):
            zf.writestr("w.npy", _npy(np.zeros(2)))
    with pytest.raises(CheckpointError, match="'w.npy' appears twice"):
        load(io.BytesIO(buf.getvalue()))
    raw = bytearray(_npz_with({"w.npy": _npy(np.ones(2))}))
    central = raw.index(b"PK\x01\x02")
    raw[central + 8] |= 1  # the "encrypted" flag bit
    with pytest.raises(CheckpointError, match="'w.npy' is encrypted"):
        load(io.BytesIO(bytes(raw)))
