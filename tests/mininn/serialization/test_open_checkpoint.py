"""open_checkpoint (lazy reading, tensor by tensor) and write_safetensors (streamed writing)."""

from __future__ import annotations

import io
import json

import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy
import torch

import mininn
from mininn.serialization import (
    CheckpointError,
    load,
    load_metadata,
    open_checkpoint,
    save,
    write_safetensors,
)

ARRAYS = {
    "f32": np.arange(6, dtype=np.float32).reshape(2, 3),
    "scalar": np.array(3.5, np.float64),
    "half": np.ones(3, np.float16),
    "bf16": np.ones(2, ml_dtypes.bfloat16),
    "ints": np.arange(4, dtype=np.int64)[::2],  # not contiguous
    "mask": np.array([True, False]),
    "empty": np.zeros((0, 4), np.float32),
}


def _linear_file(tmp_path, weight_shape=(3, 2)):
    torch.manual_seed(0)
    reference = torch.nn.Linear(weight_shape[1], weight_shape[0])
    path = tmp_path / "linear.safetensors"
    save({k: v.numpy() for k, v in reference.state_dict().items()}, path)
    return path, reference


def test_write_safetensors_streams_a_file_that_safetensors_and_load_read_back(tmp_path):
    path = tmp_path / "w.safetensors"
    write_safetensors(path, ARRAYS, {"k": "v"})
    loaded, expected = load(path), safetensors.numpy.load_file(str(path))
    assert list(loaded) == list(ARRAYS)
    for key, value in ARRAYS.items():
        np.testing.assert_array_equal(loaded[key].numpy(), value)
        np.testing.assert_array_equal(expected[key], value)
        assert loaded[key].numpy().dtype == value.dtype == expected[key].dtype
    assert load_metadata(path) == {"k": "v"}
    assert (8 + int.from_bytes(path.read_bytes()[:8], "little")) % 8 == 0


def test_write_safetensors_takes_pairs_and_a_file_object_and_save_writes_the_same_bytes(tmp_path):
    sd = {"w": mininn.randn(3, 2), "b": np.arange(3)}
    buffer = io.BytesIO()
    write_safetensors(buffer, iter(sd.items()), {"k": "v"})
    save(sd, tmp_path / "m.safetensors", metadata={"k": "v"})
    assert buffer.getvalue() == (tmp_path / "m.safetensors").read_bytes()


def test_write_safetensors_refuses_a_complex_tensor_naming_its_key_and_writes_nothing(tmp_path):
    with pytest.raises(CheckpointError, match="'z'.*complex64"):
        write_safetensors(tmp_path / "w.safetensors", {"a": np.ones(2), "z": np.ones(2, np.complex64)})
    assert list(tmp_path.iterdir()) == []


def test_entries_give_dtype_shape_and_the_byte_offsets_the_header_declares(tmp_path):
    path = tmp_path / "w.safetensors"
    safetensors.numpy.save_file({"a": np.ones((2, 3), np.float32), "b": np.arange(4)}, str(path))
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + n])
    with open_checkpoint(path) as checkpoint:
        entries = {e.key: e for e in checkpoint.entries()}
        assert checkpoint.format == "safetensors" and checkpoint.metadata == {}
    for key, expected in safetensors.numpy.load_file(str(path)).items():
        entry = entries[key]
        assert (entry.dtype.name, entry.shape, entry.nbytes) == (
            expected.dtype.name,
            expected.shape,
            expected.nbytes,
        )
        assert entry.offset == 8 + n + header[key]["data_offsets"][0]
        assert raw[entry.offset : entry.offset + entry.nbytes] == expected.tobytes()


def test_read_returns_each_tensor_as_torch_wrote_it(tmp_path):
    path, reference = _linear_file(tmp_path)
    with open_checkpoint(path) as checkpoint:
        assert checkpoint.keys() == ["weight", "bias"]
        for key, value in reference.state_dict().items():
            np.testing.assert_array_equal(checkpoint.read(key).numpy(), value.numpy())


@pytest.mark.parametrize("fmt", ["pt", "npz"])
def test_pt_and_npz_files_open_with_no_byte_offsets(tmp_path, fmt):
    torch.manual_seed(0)
    reference = torch.nn.Linear(2, 3)
    path = tmp_path / f"linear.{fmt}"
    if fmt == "pt":
        torch.save(reference.state_dict(), path)
    else:
        np.savez(path, **{k: v.numpy() for k, v in reference.state_dict().items()})
    with open_checkpoint(path) as checkpoint:
        assert checkpoint.format == fmt
        assert [(e.key, e.shape, e.offset) for e in checkpoint.entries()] == [
            ("weight", (3, 2), None),
            ("bias", (3,), None),
        ]
        np.testing.assert_array_equal(checkpoint.read("bias").numpy(), reference.bias.detach().numpy())


def test_a_pt_file_that_is_not_a_flat_dict_of_tensors_is_refused(tmp_path):
    torch.save({"model": {"w": torch.ones(2)}, "epoch": 3}, tmp_path / "train.pt")
    with pytest.raises(CheckpointError, match="flat dict of tensors.*'model' is dict"):
        open_checkpoint(tmp_path / "train.pt")


def test_load_into_copies_torch_weights_tensor_by_tensor_and_outputs_match_torch(tmp_path):
    path, reference = _linear_file(tmp_path)
    module = mininn.nn.Linear(2, 3)
    with open_checkpoint(path) as checkpoint:
        result = checkpoint.load_into(module)
    assert (result.missing_keys, result.unexpected_keys) == ([], [])
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    expected = reference(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(module(mininn.tensor(x)).detach().numpy(), expected, rtol=1e-6)


def test_load_into_casts_to_the_parameters_dtype(tmp_path):
    path, reference = _linear_file(tmp_path)
    module = mininn.nn.Linear(2, 3).double()
    with open_checkpoint(path) as checkpoint:
        checkpoint.load_into(module)
    assert module.weight.dtype == mininn.float64
    np.testing.assert_array_equal(module.weight.detach().numpy(), reference.weight.detach().numpy())


def test_load_into_a_shape_mismatch_raises_torch_report_and_changes_nothing(tmp_path):
    path, _ = _linear_file(tmp_path, weight_shape=(4, 2))
    module = mininn.nn.Linear(2, 3)
    before = {k: v.clone() for k, v in module.state_dict().items()}
    with open_checkpoint(path) as checkpoint, pytest.raises(RuntimeError) as info:
        checkpoint.load_into(module)
    with pytest.raises(RuntimeError) as torch_info:
        torch.nn.Linear(2, 3).load_state_dict({"weight": torch.zeros(4, 2), "bias": torch.zeros(4)})
    assert str(info.value).replace("mininn.", "torch.") == str(torch_info.value)
    for key, value in module.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), before[key].numpy())


def test_load_into_non_strict_reports_unexpected_keys_as_torch_does(tmp_path):
    path = tmp_path / "m.safetensors"
    save({"weight": np.ones((3, 2), np.float32), "bias": np.ones(3, np.float32), "extra": np.ones(1)}, path)
    with open_checkpoint(path) as checkpoint:
        result = checkpoint.load_into(mininn.nn.Linear(2, 3), strict=False)
    assert (result.missing_keys, result.unexpected_keys) == ([], ["extra"])


def test_copy_into_an_unknown_key_or_another_shape_raises_and_writes_nothing(tmp_path):
    path, _ = _linear_file(tmp_path)
    dest = np.full((2, 3), 7.0, np.float32)
    with open_checkpoint(path) as checkpoint:
        with pytest.raises(KeyError, match="no tensor 'nope'; it has 'weight', 'bias'"):
            checkpoint.copy_into("nope", dest)
        with pytest.raises(ValueError, match=r"'weight'.*shape \(3, 2\).*shape \(2, 3\)"):
            checkpoint.copy_into("weight", dest)
    assert (dest == 7.0).all()


def test_copy_into_a_tensor_of_shape_one_into_a_0d_destination(tmp_path):
    path = tmp_path / "s.safetensors"
    save({"s": np.array([2.5], np.float32)}, path)
    dest = mininn.tensor(0.0, dtype=mininn.float64)
    with open_checkpoint(path) as checkpoint:
        checkpoint.copy_into("s", dest)
    assert dest.item() == 2.5


def test_a_truncated_file_fails_on_open(tmp_path):
    path, _ = _linear_file(tmp_path)
    path.write_bytes(path.read_bytes()[:-4])
    with pytest.raises(CheckpointError, match="truncated"):
        open_checkpoint(path)


def test_a_file_object_stays_open_after_the_checkpoint_closes(tmp_path):
    path, _ = _linear_file(tmp_path)
    with open(path, "rb") as fh:
        with open_checkpoint(fh) as checkpoint:
            assert checkpoint.read("bias").shape == (3,)
        assert not fh.closed
