"""PyTorch .pt/.pth files: read without torch, written for torch.load(weights_only=True).

torch 2.13.0 is the reference in both directions.
"""

import io
from collections import OrderedDict

import numpy as np
import pytest

import mininn
from mininn.serialization import CheckpointError, load, save

torch = pytest.importorskip("torch")
ml_dtypes = pytest.importorskip("ml_dtypes")

TORCH_DTYPES = [
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
]


def _as_float_or_plain(t):
    """A NumPy array of a torch tensor; bfloat16 goes through float32, which holds it exactly."""
    t = t.detach()
    return t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()


def _np(x):
    arr = x.detach().numpy()
    return arr.astype(np.float32) if arr.dtype == ml_dtypes.bfloat16 else arr


def _sample(dtype, shape=(2, 3)):
    gen = torch.Generator().manual_seed(0)
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=gen) * 100).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, generator=gen, dtype=dtype)


def assert_same(mine, theirs, path="obj"):
    """Structure, container types, `_metadata` and tensor values/dtypes agree."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(mine, mininn.Tensor), path
        assert tuple(mine.shape) == tuple(theirs.shape), path
        assert mine.dtype.name == str(theirs.dtype).removeprefix("torch."), path
        np.testing.assert_array_equal(_np(mine), _as_float_or_plain(theirs), err_msg=path)
    elif isinstance(theirs, dict):
        assert type(mine) is type(theirs), path
        assert list(mine) == list(theirs), path
        for key in theirs:
            assert_same(mine[key], theirs[key], f"{path}[{key!r}]")
        assert getattr(mine, "_metadata", None) == getattr(theirs, "_metadata", None), path
    elif isinstance(theirs, (list, tuple)):
        assert type(mine) is type(theirs) or isinstance(theirs, torch.Size), path
        assert len(mine) == len(theirs), path
        for i, (a, b) in enumerate(zip(mine, theirs)):
            assert_same(a, b, f"{path}[{i}]")
    else:
        assert mine == theirs and type(mine) is type(theirs), path


# ---- torch.save -> mininn.load ------------------------------------------------------------
@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
@pytest.mark.parametrize("dtype", TORCH_DTYPES, ids=str)
def test_torch_saved_tensor_of_every_dtype_loads_equal(tmp_path, dtype, legacy):
    path = tmp_path / "t.pt"
    sd = {"x": _sample(dtype), "scalar": _sample(dtype, ()), "empty": _sample(dtype, (0, 4))}
    torch.save(sd, path, _use_new_zipfile_serialization=not legacy)
    assert_same(load(path), sd)


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_torch_saved_views_keep_offsets_strides_and_shared_storage(tmp_path, legacy):
    base = torch.arange(24, dtype=torch.float32)
    grid = base.view(4, 6)
    views = {
        "base": base,
        "transposed": grid.t(),
        "sliced": grid[1:3, ::2],
        "row": grid[2],
        "tail": base[20:],
        "expanded": base[:1].expand(3, 5),
    }
    torch.save(views, tmp_path / "v.pt", _use_new_zipfile_serialization=not legacy)
    out = load(tmp_path / "v.pt")
    assert_same(out, views)
    assert out["transposed"].stride() == (1, 6)
    for name in views:
        assert np.shares_memory(out[name].numpy(), out["base"].numpy()), name
    out["base"][[6, 13]] = -1.0  # one storage, as in torch
    assert out["sliced"][0, 0].item() == -1.0 and out["row"][1].item() == -1.0


def test_torch_saved_nested_adam_checkpoint_loads_as_nested_containers(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(torch.randn(5, 3)).sum().backward()
    opt.step()
    ckpt = {
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "epoch": 3,
        "best": 0.25,
        "config": {
            "tags": {"a", "b"},
            "frozen": frozenset({1, 2}),
            "name": "mlp",
            "layers": [3, 4, 2],
            "dropout": None,
            "tag": b"v1",
            "shape": torch.Size([3, 4]),
        },
    }
    torch.save(ckpt, tmp_path / "ckpt.pth")
    out = load(tmp_path / "ckpt.pth")
    assert_same(out, ckpt)
    assert out["model"]._metadata["1"] == {"version": 2}
    assert out["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)
    assert isinstance(out["config"]["shape"], mininn.Size)


def test_torch_saved_parameter_loads_as_tensor_requiring_grad(tmp_path):
    torch.save(
        {"p": torch.nn.Parameter(torch.ones(2, 2)), "frozen": torch.nn.Parameter(torch.ones(1), False)},
        tmp_path / "p.pt",
    )
    out = load(tmp_path / "p.pt")
    assert out["p"].requires_grad and not out["frozen"].requires_grad
    np.testing.assert_array_equal(out["p"].detach().numpy(), np.ones((2, 2), np.float32))


def test_torch_file_object_and_bytesio_load_like_paths(tmp_path):
    sd = {"w": torch.randn(3, 3)}
    buf = io.BytesIO()
    torch.save(sd, buf)
    buf.seek(0)
    assert_same(load(buf), sd)
    torch.save(sd, tmp_path / "w.pt")
    with open(tmp_path / "w.pt", "rb") as fh:
        assert_same(load(fh), sd)


def test_torch_pickle_protocol_4_file_loads(tmp_path):
    sd = {"w": torch.randn(2, 2), "names": ["a", "b"]}
    torch.save(sd, tmp_path / "p4.pt", pickle_protocol=4)
    assert_same(load(tmp_path / "p4.pt"), sd)


# ---- mininn.save -> torch.load(weights_only=True) ------------------------------------------
@pytest.mark.parametrize("dtype", TORCH_DTYPES, ids=str)
def test_mininn_saved_tensor_of_every_dtype_loads_in_torch(tmp_path, dtype):
    ref = {"x": _sample(dtype), "scalar": _sample(dtype, ()), "empty": _sample(dtype, (0, 4))}
    mine = {
        k: mininn.tensor(_as_float_or_plain(v)).to(str(dtype).removeprefix("torch.")) for k, v in ref.items()
    }
    save(mine, tmp_path / "m.pt")
    back = torch.load(tmp_path / "m.pt", weights_only=True)
    assert_same(mine, back)
    assert_same(load(tmp_path / "m.pt"), back)


def test_mininn_saved_views_share_one_storage_in_torch(tmp_path):
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    obj = {"base": base, "t": base.T, "sliced": base[1:3, ::2], "row": mininn.from_numpy(base[2])}
    save(obj, tmp_path / "v.pt")
    back = torch.load(tmp_path / "v.pt", weights_only=True)
    for key in obj:
        np.testing.assert_array_equal(back[key].numpy(), np.asarray(obj[key]))
    pointers = {back[k].untyped_storage().data_ptr() for k in obj}
    assert len(pointers) == 1
    assert back["t"].stride() == (1, 6) and back["sliced"].storage_offset() == 6


def test_mininn_saved_nested_checkpoint_loads_in_torch_with_metadata(tmp_path):
    sd = OrderedDict(weight=mininn.randn(4, 3), bias=mininn.zeros(4))
    sd._metadata = OrderedDict([("", {"version": 1})])
    ckpt = {
        "model": sd,
        "optimizer": {
            "state": {0: {"step": mininn.tensor(3.0), "exp_avg": mininn.zeros(4, 3)}},
            "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0, 1]}],
        },
        "epoch": 3,
        "flags": [True, False, None],
        "big": 2**70,
        "negative": -(2**40),
        "blob": b"\x00\xffbytes",
        "config": {"name": "mlp", "ratio": 0.5, "np_scalar": np.float32(2.5)},
    }
    save(ckpt, tmp_path / "ckpt.pt")
    back = torch.load(tmp_path / "ckpt.pt", weights_only=True)
    assert back["model"]._metadata == OrderedDict([("", {"version": 1})])
    assert back["config"]["np_scalar"] == 2.5 and type(back["config"]["np_scalar"]) is float
    ckpt["config"]["np_scalar"] = 2.5
    assert_same(ckpt, back)
    assert_same(load(tmp_path / "ckpt.pt"), back)


def test_same_tensor_object_twice_is_one_tensor_after_round_trip(tmp_path):
    w = mininn.randn(3, 3)
    save({"embed": w, "head": w, "list": [w, w]}, tmp_path / "tied.pt")
    back = torch.load(tmp_path / "tied.pt", weights_only=True)
    assert back["embed"] is back["head"] is back["list"][1]
    out = load(tmp_path / "tied.pt")
    assert out["embed"] is out["head"]


def test_mininn_pt_files_are_deterministic_and_64_byte_aligned(tmp_path):
    import struct
    import zipfile

    obj = {"a": np.ones(3, np.float16), "b": np.arange(7)}
    save(obj, tmp_path / "1.pt")
    save(obj, tmp_path / "2.pt")
    raw = (tmp_path / "1.pt").read_bytes()
    assert raw == (tmp_path / "2.pt").read_bytes()
    with zipfile.ZipFile(tmp_path / "1.pt") as zf:
        names = zf.namelist()
        records = [i for i in zf.infolist() if "/data/" in i.filename]
    assert names[0] == "archive/data.pkl" and "archive/version" in names and "archive/byteorder" in names
    for info in records:
        name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26 : info.header_offset + 30])
        assert (info.header_offset + 30 + name_len + extra_len) % 64 == 0


def test_pt_save_of_unsupported_object_names_its_path(tmp_path):
    with pytest.raises(CheckpointError, match=r"cannot save obj\['cfg'\]\[1\]: set is not supported"):
        save({"cfg": [1, {2}]}, tmp_path / "x.pt")
    assert not (tmp_path / "x.pt").exists()
    with pytest.raises(CheckpointError, match="metadata is stored only by safetensors and npz"):
        save({"w": np.ones(1)}, tmp_path / "x.pt", metadata={"a": "b"})


def test_pt_save_of_self_referencing_list_round_trips(tmp_path):
    loop = [1]
    loop.append(loop)
    save({"loop": loop}, tmp_path / "loop.pt")
    back = load(tmp_path / "loop.pt")["loop"]
    assert back[0] == 1 and back[1] is back


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_torch_saved_megabyte_storages_load_equal(tmp_path, legacy):
    sd = {"a": torch.randn(512, 1024), "b": torch.randn(300, 1024).half(), "c": torch.arange(10)}
    sd["a_t"] = sd["a"].t()
    torch.save(sd, tmp_path / "big.pt", _use_new_zipfile_serialization=not legacy)
    out = load(tmp_path / "big.pt")
    assert_same(out, sd)
    assert np.shares_memory(out["a"].numpy(), out["a_t"].numpy())


def test_tuple_inside_its_own_list_round_trips_through_torch(tmp_path):
    inner = []
    pair = ("tag", inner)
    inner.append(pair)
    shared = [1, 2]
    save({"pair": pair, "after": shared, "again": shared, "pair_again": pair}, tmp_path / "cycle.pt")
    back = torch.load(tmp_path / "cycle.pt", weights_only=True)
    assert back["pair"][0] == "tag" and back["pair"][1][0][0] == "tag"
    assert back["pair_again"] is back["pair"]
    assert back["after"] == [1, 2] and back["after"] is back["again"]
    out = load(tmp_path / "cycle.pt")
    assert out["after"] is out["again"] and out["pair"][1][0][1] is out["pair"][1]
