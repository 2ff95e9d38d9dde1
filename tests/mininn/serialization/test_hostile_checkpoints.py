"""Hostile, truncated and corrupt checkpoints raise CheckpointError and execute nothing.

Every code-executing payload here would only create a marker file in
tmp_path; each test asserts that the marker does not exist afterwards.
"""

import io
import os
import pathlib
import pickle
import struct
import subprocess
import time
import tracemalloc
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mininn.serialization import CheckpointError, load, save

MAGIC = 0x1950A86A20F9469CFC6C


# ---- building pickles opcode by opcode ----------------------------------------------------
def _global(module, name):
    return b"c" + f"{module}\n{name}\n".encode()


def _str(text):
    data = text.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def _int(value):
    encoded = pickle.encode_long(value)
    return b"\x8a" + bytes([len(encoded)]) + encoded


def _tuple(items):
    return b"(" + b"".join(items) + b"t"


def _tensor(numel, size, stride, offset=0, storage="FloatStorage", key="0"):
    """`_rebuild_tensor_v2(("storage", torch.<storage>, key, "cpu", numel), offset, size, stride, ...)`."""
    pid = _tuple([_str("storage"), _global("torch", storage), _str(key), _str("cpu"), _int(numel)]) + b"Q"
    args = [
        pid,
        _int(offset),
        _tuple(map(_int, size)),
        _tuple(map(_int, stride)),
        b"\x89",
        _global("collections", "OrderedDict") + b")R",
    ]
    return _global("torch._utils", "_rebuild_tensor_v2") + _tuple(args) + b"R"


def _dict_pickle(key, value):
    return b"\x80\x02}" + _str(key) + value + b"s."


def _torch_zip(data_pkl, records=None):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", data_pkl)
        zf.writestr("archive/byteorder", "little")
        for key, data in (records or {}).items():
            zf.writestr(f"archive/data/{key}", data)
        zf.writestr("archive/version", "3\n")
    return buf.getvalue()


def _legacy(main_pkl, storages=()):
    """The legacy layout around `main_pkl`; `storages` are (key, numel, raw bytes)."""
    sys_info = {
        "protocol_version": 1001,
        "little_endian": True,
        "type_sizes": {"short": 2, "int": 4, "long": 4},
    }
    head = b"".join(pickle.dumps(x, protocol=2) for x in (MAGIC, 1001, sys_info))
    keys = pickle.dumps([k for k, _, _ in storages], protocol=2)
    data = b"".join(struct.pack("<q", n) + raw for _, n, raw in storages)
    return head + main_pkl + keys + data


class _Call:
    """Pickles as a call of `func(*args)`; only ever dumped, never loaded here."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def _payloads(marker):
    """(name, pickle bytes, refused global) for code that would create `marker`."""
    m = str(marker)
    return [
        ("os.system", b"\x80\x02" + _global("os", "system") + _str(f"touch {m}") + b"\x85R.", "os.system"),
        (
            "builtins.exec",
            b"\x80\x02"
            + _global("builtins", "exec")
            + _str(f"import pathlib; pathlib.Path({m!r}).touch()")
            + b"\x85R.",
            "builtins.exec",
        ),
        (
            "builtins.eval",
            b"\x80\x02"
            + _global("builtins", "eval")
            + _str(f"__import__('pathlib').Path({m!r}).touch()")
            + b"\x85R.",
            "builtins.eval",
        ),
        (
            "subprocess",
            pickle.dumps(_Call(subprocess.check_call, ["touch", m]), protocol=2, fix_imports=False),
            "subprocess.check_call",
        ),
        (
            "stack_global",
            pickle.dumps(_Call(os.system, f"touch {m}"), protocol=4),
            f"{os.system.__module__}.system",
        ),
        (
            "pathlib.touch",
            pickle.dumps(_Call(pathlib.Path.touch, pathlib.Path(m)), protocol=2),
            "__builtin__.getattr",
        ),
        (
            "nested in dict",
            _dict_pickle("model", _global("os", "system") + _str(f"touch {m}") + b"\x85R"),
            "os.system",
        ),
    ]


def _wrappers():
    return {
        "torch zip": _torch_zip,
        "legacy main pickle": _legacy,
        "bare pickle": lambda pkl: pkl,
    }


@pytest.mark.parametrize("wrapper", list(_wrappers()))
@pytest.mark.parametrize("payload", range(7), ids=[p[0] for p in _payloads("m")])
def test_code_executing_pickle_is_refused_by_name_before_it_runs(tmp_path, wrapper, payload):
    marker = tmp_path / "marker"
    _, pkl, refused = _payloads(marker)[payload]
    path = tmp_path / "evil.pt"
    path.write_bytes(_wrappers()[wrapper](pkl))
    with pytest.raises(CheckpointError, match=f"refused pickle global {refused}"):
        load(path)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (_global("torch", "FloatStorage") + b")R", "REDUCE calls torch.FloatStorage"),
        (b"}}" + _str("a") + b"K\x01sb", "BUILD on dict"),
        (b"(" + b"i" + b"os\nsystem\n", "refused pickle opcode INST"),
        (b"(" + _global("collections", "OrderedDict") + b"o", "refused pickle opcode OBJ"),
        (_global("collections", "OrderedDict") + b")\x81", "refused pickle opcode NEWOBJ"),
        (b"\x82\x01", "refused pickle opcode EXT1"),
        (b"P" + b"0\n", "refused pickle opcode PERSID"),
        (b"h\x07", "memo key 7 missing"),
        (b"]" + b"K\x01" + b"a" * 2, "malformed pickle"),
        (b"K\x01K\x02a", "APPEND on int"),
        (b"\x8b\xff\xff\xff\x7f", "truncated pickle"),
        (b"X\xff\xff\xff\xff", "truncated pickle"),
        (
            _global("torch._utils", "_rebuild_tensor_v2") + _tuple([b"]", b"K\x00", b")", b")"]) + b"R",
            "tensor storage must come from a persistent id",
        ),
        (_tuple([_str("module"), _str("os")]) + b"Q", "unsupported persistent id"),
        (
            _tuple([_str("storage"), _str("x"), _str("0"), _str("cpu"), _int(1)]) + b"Q",
            "instead of a storage type",
        ),
        (
            _tuple(
                [
                    _str("storage"),
                    _global("torch", "FloatStorage"),
                    _str("../../etc/passwd"),
                    _str("cpu"),
                    _int(1),
                ]
            )
            + b"Q",
            "malformed storage id",
        ),
        (_global("torch", "ComplexFloatStorage"), "refused pickle global torch.ComplexFloatStorage"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_disallowed_opcodes_and_misused_globals_raise_checkpoint_error(tmp_path, body, message):
    path = tmp_path / "bad.pt"
    path.write_bytes(_torch_zip(b"\x80\x02" + body + b"."))
    with pytest.raises(CheckpointError, match=message):
        load(path)


def test_torch_zip_records_and_views_out_of_range_are_refused(tmp_path):
    four_floats = np.arange(4, dtype=np.float32).tobytes()
    cases = {
        "offset": (_tensor(4, (2,), (1,), offset=3), "reads element 4 of storage '0', which has 4"),
        "stride": (_tensor(4, (2, 2), (3, 1)), "reads element 4"),
        "ndim": (_tensor(4, (1,) * 65, (1,) * 65), "invalid size"),
        "negative stride": (_tensor(4, (2,), (-1,)), "invalid size"),
        "numel vs record": (_tensor(5, (5,), (1,)), "holds 16 bytes but is declared as 5 elements"),
        "missing record": (_tensor(4, (4,), (1,), key="9"), "no record 'archive/data/9'"),
        "dtype clash": (
            b"(" + _tensor(4, (4,), (1,)) + _tensor(2, (2,), (1,), storage="DoubleStorage") + b"l",
            "storage '0' is used as 2 x float64 and as 4 x float32",
        ),
    }
    for name, (tensor, message) in cases.items():
        path = tmp_path / f"{name}.pt"
        path.write_bytes(_torch_zip(b"\x80\x02" + tensor + b".", {"0": four_floats}))
        with pytest.raises(CheckpointError, match=message):
            load(path)


def test_torch_zip_record_with_bad_crc_is_refused(tmp_path):
    good = io.BytesIO()
    save({"w": np.arange(64, dtype=np.float32)}, good, format="pt")
    raw = bytearray(good.getvalue())
    at = raw.index(np.arange(64, dtype=np.float32).tobytes())
    raw[at + 10] ^= 0xFF
    with pytest.raises(CheckpointError, match="CRC mismatch"):
        load(io.BytesIO(bytes(raw)))


def _assert_fails_fast_without_allocating(data, message, tmp_path):
    path = tmp_path / "bomb"
    path.write_bytes(data)
    assert len(data) < 2000
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(CheckpointError, match=message):
            load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000 and time.perf_counter() - start < 2


GiB = 1 << 30


def test_size_bombs_fail_fast_in_every_format(tmp_path):
    header = b'{"w":{"dtype":"F32","shape":[100000,100000,10],"data_offsets":[0,400000000000]}}'
    safetensors_bomb = struct.pack("<Q", len(header)) + header + b"\0" * 16
    _assert_fails_fast_without_allocating(safetensors_bomb, "exceed the 16 data bytes", tmp_path)

    npy = io.BytesIO()
    np.lib.format.write_array_header_1_0(npy, {"descr": "<f4", "fortran_order": False, "shape": (25 * GiB,)})
    npz_bomb = io.BytesIO()
    with zipfile.ZipFile(npz_bomb, "w") as zf:
        zf.writestr("w.npy", npy.getvalue() + b"\0" * 8)
    _assert_fails_fast_without_allocating(npz_bomb.getvalue(), "needs 107374182528 bytes", tmp_path)

    zip_bomb = _torch_zip(_dict_pickle("w", _tensor(25 * GiB, (25 * GiB,), (1,))), {"0": b"\0" * 4})
    _assert_fails_fast_without_allocating(zip_bomb, "holds 4 bytes but is declared as 26843545600", tmp_path)

    legacy_bomb = _legacy(_legacy_tensor_pickle(25 * GiB), [("0", 25 * GiB, b"\0" * 4)])
    _assert_fails_fast_without_allocating(legacy_bomb, "more than the file's remaining", tmp_path)

    view_bomb = _torch_zip(_dict_pickle("w", _tensor(1, (GiB, GiB), (1, 1))), {"0": b"\0" * 4})
    _assert_fails_fast_without_allocating(view_bomb, "reads element", tmp_path)


def test_a_quarter_gib_claim_is_refused_before_allocation(tmp_path):
    """Small enough that an allocation would succeed, so only the check can stop it."""
    claim = GiB // 16  # 64 Mi float32 elements = 256 MiB
    legacy_bomb = _legacy(_legacy_tensor_pickle(claim), [("0", claim, b"\0" * 64)])
    _assert_fails_fast_without_allocating(legacy_bomb, "more than the file's remaining", tmp_path)
    zip_bomb = _torch_zip(_dict_pickle("w", _tensor(claim, (claim,), (1,))), {"0": b"\0" * 64})
    _assert_fails_fast_without_allocating(zip_bomb, "holds 64 bytes", tmp_path)


def _legacy_tensor_pickle(numel):
    """A legacy main pickle: its persistent ids carry a sixth field (the view, None)."""
    pid = _tuple(
        [_str("storage"), _global("torch", "FloatStorage"), _str("0"), _str("cpu"), _int(numel), b"N"]
    )
    args = [
        pid + b"Q",
        _int(0),
        _tuple([_int(numel)]),
        _tuple([_int(1)]),
        b"\x89",
        _global("collections", "OrderedDict") + b")R",
    ]
    return _dict_pickle("w", _global("torch._utils", "_rebuild_tensor_v2") + _tuple(args) + b"R")


def test_npz_deflate_member_declaring_impossible_size_is_refused(tmp_path):
    buf = io.BytesIO()
    np.savez_compressed(buf, w=np.zeros(1000, np.float32))
    raw = bytearray(buf.getvalue())
    central = raw.index(b"PK\x01\x02")
    raw[central + 24 : central + 28] = struct.pack("<I", 0xFFFFFFF0)  # uncompressed size
    path = tmp_path / "bomb.npz"
    path.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match="more than deflate can produce"):
        load(path)


def test_npz_object_array_is_refused_without_unpickling(tmp_path):
    marker = tmp_path / "marker"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        with zf.open("evil.npy", "w") as member:
            np.lib.format.write_array(
                member, np.array([_Call(pathlib.Path.touch, marker)], dtype=object), allow_pickle=True
            )
    path = tmp_path / "evil.npz"
    path.write_bytes(buf.getvalue())
    with pytest.raises(CheckpointError, match="holds Python objects, which need pickle: refused"):
        load(path)
    assert not marker.exists()


def test_legacy_storage_keys_must_match_the_pickle(tmp_path):
    main = _legacy_tensor_pickle(2)
    for storages, message in [
        ([("1", 2, b"\0" * 8)], "do not match"),
        ([("0", 3, b"\0" * 12)], "holds 3 elements, declared 2"),
        ([("0", 2, b"\0" * 4)], "truncated file|needs bytes"),
    ]:
        path = tmp_path / "legacy.pt"
        path.write_bytes(_legacy(main, storages))
        with pytest.raises(CheckpointError, match=message):
            load(path)


def test_legacy_header_must_carry_torch_magic_and_protocol(tmp_path):
    cases = [
        (pickle.dumps(1234, protocol=2), "magic number is wrong"),
        (pickle.dumps(MAGIC, protocol=2) + pickle.dumps(999, protocol=2), "protocol version 999"),
        (
            pickle.dumps(MAGIC, protocol=2)
            + pickle.dumps(1001, protocol=2)
            + pickle.dumps({"little_endian": False}, protocol=2),
            "big-endian",
        ),
    ]
    for data, message in cases:
        with pytest.raises(CheckpointError, match=message):
            load(io.BytesIO(data))


# ---- truncation, corruption, random bytes --------------------------------------------------
def _valid_files():
    sd = {"w": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.array([1, 2], np.int64)}
    files = {}
    for fmt in ("safetensors", "npz", "pt"):
        buf = io.BytesIO()
        save(sd, buf, format=fmt)
        files[fmt] = buf.getvalue()
    files["legacy"] = _legacy(_legacy_tensor_pickle(3), [("0", 3, np.ones(3, np.float32).tobytes())])
    return files


VALID = _valid_files()


@pytest.mark.parametrize("fmt", list(VALID))
def test_every_truncation_raises_checkpoint_error(fmt):
    data = VALID[fmt]
    assert isinstance(load(io.BytesIO(data)), dict)
    for cut in range(len(data)):
        with pytest.raises(CheckpointError):
            load(io.BytesIO(data[:cut]))


@pytest.mark.parametrize("fmt", list(VALID))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_corrupted_bytes_load_or_raise_checkpoint_error(fmt, data):
    raw = bytearray(VALID[fmt])
    for _ in range(data.draw(st.integers(1, 8))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    try:
        out = load(io.BytesIO(bytes(raw)))
    except CheckpointError:
        return
    assert isinstance(out, dict)


PREFIXES = [
    b"",
    b"PK\x03\x04",
    b"PK\x05\x06",
    b"\x80\x02",
    b"\x80\x04\x95",
    b"\x80\x02\x8a\nl\xfc\x9cF\xf9 j\xa8P\x19.",
    struct.pack("<Q", 40) + b"{",
]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(PREFIXES), st.binary(max_size=600))
def test_random_bytes_raise_checkpoint_error(prefix, tail):
    with pytest.raises(CheckpointError):
        load(io.BytesIO(prefix + tail))


# ---- the rarer allowed forms, built by hand ---------------------------------------------------
def _legacy_view_pickle(view):
    """A legacy tensor whose persistent id carries a storage view (view_key, offset, size)."""
    pid = _tuple([_str("storage"), _global("torch", "FloatStorage"), _str("0"), _str("cpu"), _int(6), view])
    args = [
        pid + b"Q",
        _int(0),
        _tuple([_int(2)]),
        _tuple([_int(1)]),
        b"\x89",
        _global("collections", "OrderedDict") + b")R",
    ]
    return _dict_pickle("w", _global("torch._utils", "_rebuild_tensor_v2") + _tuple(args) + b"R")


def test_legacy_storage_views_are_honoured_and_bounds_checked(tmp_path):
    data = np.arange(6, dtype=np.float32)
    good = _legacy(_legacy_view_pickle(_tuple([_str("v"), _int(3), _int(2)])), [("0", 6, data.tobytes())])
    np.testing.assert_array_equal(load(io.BytesIO(good))["w"].numpy(), [3.0, 4.0])
    bad = _legacy(_legacy_view_pickle(_tuple([_str("v"), _int(5), _int(2)])), [("0", 6, data.tobytes())])
    with pytest.raises(CheckpointError, match=r"storage view 'v' \[5, 7\) exceeds storage '0'"):
        load(io.BytesIO(bad))


def _zip_with_tensor_call(call):
    return _torch_zip(_dict_pickle("w", call), {"0": np.arange(4, dtype=np.float32).tobytes()})


def test_older_and_parameter_rebuild_functions_load(tmp_path):
    pid = _tuple([_str("storage"), _global("torch", "FloatStorage"), _str("0"), _str("cpu"), _int(4)]) + b"Q"
    old = _global("torch._utils", "_rebuild_tensor") + _tuple(
        [pid, _int(1), _tuple([_int(2)]), _tuple([_int(1)])]
    )
    loaded = load(io.BytesIO(_zip_with_tensor_call(old + b"R")))
    np.testing.assert_array_equal(loaded["w"].numpy(), [1.0, 2.0])

    tensor = _tensor(4, (4,), (1,))
    empty = _global("collections", "OrderedDict") + b")R"
    with_state = (
        _global("torch._utils", "_rebuild_parameter_with_state")
        + _tuple([tensor, b"\x88", empty, b"}"])
        + b"R"
    )
    out = load(io.BytesIO(_zip_with_tensor_call(with_state)))["w"]
    assert out.requires_grad and out.shape == (4,)
    attrs = (
        _global("torch._utils", "_rebuild_parameter_with_state")
        + _tuple([tensor, b"\x88", empty, b"}" + _str("note") + _str("hi") + b"s"])
        + b"R"
    )
    with pytest.raises(CheckpointError, match="parameter attributes .* are not supported"):
        load(io.BytesIO(_zip_with_tensor_call(attrs)))


def test_integer_parameter_requiring_grad_is_refused():
    call = (
        _global("torch._utils", "_rebuild_parameter")
        + _tuple(
            [
                _tensor(4, (4,), (1,), storage="IntStorage"),
                b"\x88",
                _global("collections", "OrderedDict") + b")R",
            ]
        )
        + b"R"
    )
    data = _torch_zip(_dict_pickle("w", call), {"0": np.arange(4, dtype=np.int32).tobytes()})
    with pytest.raises(CheckpointError, match="only floating point parameters can require gradients"):
        load(io.BytesIO(data))


def test_torchscript_archives_get_a_clear_error(tmp_path):
    torch = pytest.importorskip("torch")
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), tmp_path / "scripted.pt")
    with pytest.raises(CheckpointError, match=r"TorchScript archive \(torch.jit.save\)"):
        load(tmp_path / "scripted.pt")


def test_a_pickled_class_names_it_and_how_to_save_the_weights_instead(tmp_path):
    path = tmp_path / "model.pt"
    path.write_bytes(_torch_zip(_global("textclf", "BiLSTMClassifier") + b")\x81."))  # NEWOBJ: a model
    with pytest.raises(CheckpointError) as raised:
        load(path)
    assert str(raised.value) == (
        "refused pickle global textclf.BiLSTMClassifier: checkpoints may hold only tensors and plain "
        "containers (dict, list, tuple, str, numbers); this file holds a pickled textclf.BiLSTMClassifier "
        "object, as torch.save(model) writes a whole model: save its weights with "
        "torch.save(model.state_dict(), path) instead"
    )


def test_a_refused_function_gets_no_advice_about_models(tmp_path):
    path = tmp_path / "evil.pt"
    path.write_bytes(_torch_zip(_global("posix", "system") + b"."))
    with pytest.raises(CheckpointError) as raised:
        load(path)
    assert "state_dict" not in str(raised.value)
