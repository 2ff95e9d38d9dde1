"""Fuzzing ``mininn.load`` and the upload endpoint with mutated checkpoints.

Seeds are valid files of every readable format: safetensors, ``.npz`` (stored
and deflated), mininn's ``.pt`` writer and, where torch is installed, real
``torch.save`` files (zip and legacy). Mutations are byte-level (flips, spans,
inserts, deletes, truncation, splices of two seeds) and structure-aware
(the safetensors JSON header's fields; the pickle and ``.npy`` headers inside
a zip, rewritten with fresh CRCs so that the mutation reaches the unpickler
and the ``.npy`` reader instead of stopping at zipfile's checksum).

The property: every input ends in a loaded checkpoint or ``CheckpointError``,
never another exception, a hang or a side effect; over HTTP, in 201 or a 4xx,
and the server keeps serving.
"""

from __future__ import annotations

import io
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _hardening_support import (
    bearer,
    examples,
    mlp_state,
    read_zip_member,
    rewrite_zip_member,
    safetensors_bytes,
    safetensors_parts,
    zip_member,
)
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mininn
from mininn.serialization import CheckpointError

pytestmark = pytest.mark.timeout(240)


def _mininn_seed(state: dict[str, Any], fmt: str) -> bytes:
    buf = io.BytesIO()
    mininn.save(state, buf, format=fmt)
    return buf.getvalue()


def _npz_seed(compressed: bool) -> bytes:
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **mlp_state(11))
    return buf.getvalue()


def _torch_seeds() -> dict[str, bytes]:
    try:
        import torch
    except ImportError:  # torch is a test extra; the mininn-written .pt seeds still run
        return {}
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    base = torch.arange(12, dtype=torch.float32)
    nested = {
        "state_dict": model.state_dict(),
        "step": 7,
        "views": [base[2:8].view(2, 3), base.view(3, 4).t()],  # views share one storage
        "meta": ("text", b"bytes", None, True, 1.5),
        "ints": torch.tensor([1, 2, 3], dtype=torch.int64),
        "half": torch.ones(2, 2, dtype=torch.bfloat16),
    }
    seeds = {}
    for name, obj, zipped in [
        ("torch-zip", model.state_dict(), True),
        ("torch-nested", nested, True),
        ("torch-legacy", model.state_dict(), False),
    ]:
        buf = io.BytesIO()
        torch.save(obj, buf, _use_new_zipfile_serialization=zipped)
        seeds[name] = buf.getvalue()
    return seeds


SEEDS: dict[str, bytes] = {
    "safetensors": _mininn_seed(mlp_state(10), "safetensors"),
    "npz": _mininn_seed(mlp_state(10), "npz"),
    "npz-numpy": _npz_seed(False),
    "npz-deflated": _npz_seed(True),
    "pt": _mininn_seed({"state": mlp_state(10), "epoch": 3, "tags": ["a", ("b", 2)]}, "pt"),
    "npz-bf16": _mininn_seed({"w": mininn.ones(3, 2, dtype=mininn.bfloat16)}, "npz"),
    **_torch_seeds(),
}
ZIP_SEEDS = [name for name, data in SEEDS.items() if data.startswith(b"PK")]


def _load_or_refuse(data: bytes, *, from_path: bool) -> Any:
    """``mininn.load`` on ``data``; None when it raised ``CheckpointError`` (anything else fails the test)."""
    try:
        if not from_path:
            return mininn.load(io.BytesIO(data))
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "checkpoint"
            path.write_bytes(data)
            return mininn.load(path)
    except CheckpointError:
        return None


# ---- byte-level mutations ------------------------------------------------------------------------
@st.composite
def mutated(draw: st.DrawFn, seeds: list[str]) -> bytes:
    """A seed after 1-6 random byte-level edits."""
    raw = bytearray(SEEDS[draw(st.sampled_from(seeds))])
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["flip", "span", "insert", "delete", "truncate", "splice", "dup"]))
        at = draw(st.integers(0, max(len(raw) - 1, 0)))
        if kind == "flip" and raw:
            raw[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "span":
            patch = draw(st.binary(min_size=1, max_size=16))
            raw[at : at + len(patch)] = patch
        elif kind == "insert":
            raw[at:at] = draw(st.binary(min_size=1, max_size=64))
        elif kind == "delete":
            del raw[at : at + draw(st.integers(1, 64))]
        elif kind == "truncate":
            del raw[at:]
        elif kind == "splice":
            other = SEEDS[draw(st.sampled_from(list(SEEDS)))]
            cut = draw(st.integers(0, len(other)))
            raw[at:] = other[cut:]
        elif kind == "dup" and raw:
            span = raw[at : at + draw(st.integers(1, 256))]
            raw[at:at] = span
    return bytes(raw)


@settings(max_examples=examples(400), deadline=None)
@given(data=mutated(list(SEEDS)), from_path=st.booleans())
def test_byte_mutated_checkpoints_load_or_raise_checkpoint_error(data: bytes, from_path: bool) -> None:
    _load_or_refuse(data, from_path=from_path)


# ---- structure-aware mutations ---------------------------------------------------------------------
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
DTYPE_CODES = st.sampled_from(
    ["F32", "F16", "BF16", "F64", "I64", "I32", "I8", "U8", "BOOL", "F8_E4M3", "C64", "", "f32"]
)
DIMS = st.integers(-3, 2**64) | st.sampled_from([0, 1, 2, 3, 4, 8, 2**31, 2**62])


@st.composite
def safetensors_header_mutations(draw: st.DrawFn) -> bytes:
    """The safetensors seed with tensor entries, offsets, dtypes, shapes or metadata changed."""
    header, payload = safetensors_parts(SEEDS["safetensors"])
    names = [key for key in header if key != "__metadata__"]
    for _ in range(draw(st.integers(1, 4))):
        name = draw(st.sampled_from(names))
        field = draw(st.sampled_from(["dtype", "shape", "data_offsets", "entry", "metadata", "extra"]))
        if not isinstance(header[name], dict):
            header[name] = {}
        if field == "dtype":
            header[name]["dtype"] = draw(DTYPE_CODES | JSON_VALUES)
        elif field == "shape":
            header[name]["shape"] = draw(st.lists(DIMS, max_size=70) | JSON_VALUES)
        elif field == "data_offsets":
            header[name]["data_offsets"] = draw(st.lists(DIMS, min_size=0, max_size=3) | JSON_VALUES)
        elif field == "entry":
            header[name] = draw(JSON_VALUES)
        elif field == "metadata":
            header["__metadata__"] = draw(JSON_VALUES)
        else:
            header[draw(st.text(max_size=10))] = draw(JSON_VALUES)
    if draw(st.booleans()):
        payload = payload[: draw(st.integers(0, len(payload)))] + draw(st.binary(max_size=32))
    return safetensors_bytes(header, payload)


@settings(max_examples=examples(300), deadline=None)
@given(data=safetensors_header_mutations(), from_path=st.booleans())
def test_safetensors_header_mutations_load_or_raise_checkpoint_error(data: bytes, from_path: bool) -> None:
    _load_or_refuse(data, from_path=from_path)


@st.composite
def zip_member_mutations(draw: st.DrawFn) -> bytes:
    """A zip seed whose pickle, .npy header or storage member is edited, with valid CRCs."""
    seed = SEEDS[draw(st.sampled_from(ZIP_SEEDS))]
    member = draw(st.sampled_from(_members(seed)))
    content = bytearray(read_zip_member(seed, member))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, max(len(content) - 1, 0)))
        kind = draw(st.sampled_from(["byte", "span", "insert", "delete", "truncate"]))
        if kind == "byte" and content:
            content[at] = draw(st.integers(0, 255))
        elif kind == "span":
            patch = draw(st.binary(min_size=1, max_size=12))
            content[at : at + len(patch)] = patch
        elif kind == "insert":
            content[at:at] = draw(st.binary(min_size=1, max_size=24))
        elif kind == "delete":
            del content[at : at + draw(st.integers(1, 24))]
        else:
            del content[at:]
    return rewrite_zip_member(seed, member, bytes(content))


def _members(seed: bytes) -> list[str]:
    with zipfile.ZipFile(io.BytesIO(seed)) as zf:
        return zf.namelist()


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=zip_member_mutations(), from_path=st.booleans())
def test_zip_member_mutations_load_or_raise_checkpoint_error(data: bytes, from_path: bool) -> None:
    _load_or_refuse(data, from_path=from_path)


# ---- code execution -----------------------------------------------------------------------------------
def _payloads(canary: Path) -> list[bytes]:
    """Pickle fragments that would run code (each would create ``canary``) if unpickled freely."""
    command = f"touch {canary}".encode()
    path = str(canary).encode()
    return [
        b"cos\nsystem\n(S'" + command + b"'\ntR",
        b"cposix\nsystem\n(S'" + command + b"'\ntR",
        b"cbuiltins\nexec\n(S'open(\"" + path + b'", "w")\'\ntR',
        b'cbuiltins\neval\n(S\'__import__("os").system("' + command + b"\")'\ntR",
        b"\x8c\x02os\x8c\x06system\x93\x8c" + bytes([len(command)]) + command + b"\x85R",
        b"csubprocess\ncall\n((S'touch'\nS'" + path + b"'\nltR",
        b"cbuiltins\ngetattr\n(cbuiltins\n__import__\n(S'os'\ntRS'system'\ntR(S'" + command + b"'\ntR",
    ]


@settings(max_examples=examples(250), deadline=None)
@given(
    seed=st.sampled_from([name for name in ZIP_SEEDS if name.startswith(("pt", "torch"))]),
    payload_index=st.integers(0, 6),
    where=st.floats(0, 1),
)
def test_code_executing_pickles_spliced_into_checkpoints_never_run(
    seed: str, payload_index: int, where: float
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        canary = Path(folder) / "pwned"
        member = zip_member(SEEDS[seed], ".pkl")
        pickle = read_zip_member(SEEDS[seed], member)
        at = int(where * (len(pickle) - 1))
        spliced = pickle[:at] + _payloads(canary)[payload_index] + pickle[at:]
        result = _load_or_refuse(rewrite_zip_member(SEEDS[seed], member, spliced), from_path=False)
        assert not canary.exists()
        assert result is None or isinstance(result, (dict, list, tuple))


@pytest.mark.parametrize("index", range(7))
def test_a_whole_code_executing_pickle_is_refused(tmp_path: Path, index: int) -> None:
    canary = tmp_path / "pwned"
    pickle = b"\x80\x02" + _payloads(canary)[index] + b"."
    data = rewrite_zip_member(SEEDS["pt"], zip_member(SEEDS["pt"], ".pkl"), pickle)
    with pytest.raises(CheckpointError):
        mininn.load(io.BytesIO(data))
    with pytest.raises(CheckpointError):
        mininn.load(io.BytesIO(b"\x80\x02" + _payloads(canary)[index] + b"."))  # a bare (legacy) pickle
    assert not canary.exists()


# ---- the same bytes over HTTP ---------------------------------------------------------------------------
UPLOADED_STATUSES = {201, 400, 413, 422}


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=mutated(list(SEEDS)) | safetensors_header_mutations() | zip_member_mutations())
def test_mutated_uploads_end_in_201_or_a_4xx_and_the_server_keeps_serving(
    keyed_client: TestClient, data: bytes
) -> None:
    before = keyed_client.get("/v2/models/mlp").json()["versions"]
    response = keyed_client.put("/v2/models/mlp/state_dict", content=data, headers=bearer())
    assert response.status_code in UPLOADED_STATUSES, response.text
    assert isinstance(response.json()["error" if response.status_code >= 400 else "model_version"], str)
    after = keyed_client.get("/v2/models/mlp").json()["versions"]
    if response.status_code == 201:
        version = response.json()["model_version"]
        assert after == [*before, version]
        weights = keyed_client.app.state.service.repository.weights_path("mlp", int(version))
        assert set(mininn.load(weights)) == set(mlp_state(0))
    else:
        assert after == before  # a refused upload changes nothing
    infer = keyed_client.post(
        "/v2/models/mlp/infer",
        json={"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]},
    )
    assert infer.status_code == 200, infer.text


def test_no_upload_leaves_staging_files_behind(keyed_client: TestClient, module_repository: Path) -> None:
    for data in (SEEDS["safetensors"][:-5], b"\x80\x02" + b"cos\nsystem\n(S'true'\ntR.", b"PK\x03\x04junk"):
        assert (
            keyed_client.put("/v2/models/mlp/state_dict", content=data, headers=bearer()).status_code == 400
        )
    leftovers = [p for p in (module_repository / "mlp").iterdir() if p.name.startswith(".")]
    assert leftovers == []
    assert all(
        not name.endswith((".part", ".tmp")) for _, _, files in os.walk(module_repository) for name in files
    )


def test_every_seed_is_a_valid_checkpoint() -> None:
    for name, data in SEEDS.items():
        assert _load_or_refuse(data, from_path=False) is not None, name


# ---- well-formed files holding the wrong state dict, with random upload options ----------------------
DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"]
KEY_NAMES = st.sampled_from(["0.weight", "0.bias", "3.weight", "3.bias", "module.0.weight", "x", "", "0"])


@st.composite
def state_dicts(draw: st.DrawFn) -> dict[str, Any]:
    """A state dict near the ``mlp``'s: its keys (some renamed or missing), random shapes and dtypes."""
    state: dict[str, Any] = {}
    base = mlp_state(draw(st.integers(0, 3)))
    for key, array in base.items():
        action = draw(st.sampled_from(["keep", "keep", "drop", "shape", "dtype", "nan", "rename"]))
        if action == "keep":
            state[key] = array
        elif action == "shape":
            shape = draw(st.lists(st.integers(0, 9), max_size=3))
            state[key] = np.zeros(shape, np.float32)
        elif action == "dtype":
            state[key] = mininn.tensor(array).to(dtype=getattr(mininn, draw(st.sampled_from(DTYPES))))
        elif action == "nan":
            state[key] = np.full_like(array, draw(st.sampled_from([np.nan, np.inf, -np.inf])))
        elif action == "rename":
            state[draw(KEY_NAMES)] = array
    for _ in range(draw(st.integers(0, 2))):
        state[draw(KEY_NAMES)] = np.ones(draw(st.lists(st.integers(0, 4), max_size=2)), np.float32)
    return state


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    state=state_dicts(),
    fmt=st.sampled_from(["safetensors", "npz", "pt"]),
    strict=st.sampled_from([None, "true", "false", "maybe"]),
    nonfinite=st.sampled_from([None, "true", "false"]),
    prefix=st.sampled_from([None, "", "module.", "0.", "x" * 200]),
)
def test_wrong_state_dicts_with_random_options_end_in_201_or_a_4xx(
    keyed_client: TestClient, state: dict[str, Any], fmt: str, strict: Any, nonfinite: Any, prefix: Any
) -> None:
    buf = io.BytesIO()
    mininn.save(state, buf, format=fmt)
    params = {
        k: v
        for k, v in {"strict": strict, "allow_nonfinite": nonfinite, "strip_prefix": prefix}.items()
        if v is not None
    }
    before = keyed_client.get("/v2/models/mlp").json()["versions"]
    response = keyed_client.put(
        "/v2/models/mlp/state_dict", content=buf.getvalue(), params=params, headers=bearer()
    )
    assert response.status_code in UPLOADED_STATUSES, response.text[:300]
    after = keyed_client.get("/v2/models/mlp").json()["versions"]
    assert after == ([*before, response.json()["model_version"]] if response.status_code == 201 else before)
    assert (
        keyed_client.post(
            "/v2/models/mlp/infer",
            json={"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]},
        ).status_code
        == 200
    )
