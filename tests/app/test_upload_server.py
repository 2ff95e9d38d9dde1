"""Uploads end to end on a real server: torch checkpoints in, torch outputs out; bad ones change nothing."""

from __future__ import annotations

import io
import json
import os
import socket
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from _app_support import MLP_CONFIG, Server, mlp_weights, numpy_mlp, torch_mlp, wait_until
from _upload_support import (
    AUTH,
    KEY,
    X,
    infer,
    keyed_server,
    put_state_dict,
    raw_request,
    sha256,
    torch_bytes,
    tree_digest,
)

from mininn.serialization import load_metadata

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")

LIMIT = 256 * 1024  # MININN_MAX_UPLOAD_BYTES of this server
FIT = "the uploaded state dict does not fit architecture 'mlp': Error(s) in loading state_dict for MLP:\n\t"
NAME_RULE = "use 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with keyed_server(tmp_path_factory.mktemp("uploads"), MININN_MAX_UPLOAD_BYTES=str(LIMIT)) as running:
        yield running


def _torch_model(seed: int) -> Any:
    return torch_mlp(mlp_weights(seed))


def _expected(model: Any, x: np.ndarray = X) -> np.ndarray:
    with torch.no_grad():
        return model(torch.from_numpy(x)).numpy()


def _weights_file(server: Server, name: str, version: str) -> Path:
    return server.repository / name / version / "weights.safetensors"


# -- good uploads ------------------------------------------------------------


def test_a_torch_save_upload_serves_torch_outputs(server: Server) -> None:
    model = _torch_model(21)
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    body = buffer.getvalue()
    response = put_state_dict(server, "mlp", body)
    assert response.status_code == 201, response.text
    document = response.json()
    version = document["model_version"]
    assert response.headers["location"] == f"/v2/models/mlp/versions/{version}"
    assert (document["source_format"], document["sha256"], document["bytes"]) == (
        "pt",
        sha256(body),
        len(body),
    )
    assert (document["missing_keys"], document["unexpected_keys"], document["served"]) == ([], [], True)
    served, output = infer(server, "mlp")
    assert served == version
    np.testing.assert_allclose(output, _expected(model), rtol=1e-5, atol=1e-6)
    metadata = load_metadata(_weights_file(server, "mlp", version))
    assert metadata["mininn.source_format"] == "pt"
    assert metadata["mininn.source_sha256"] == sha256(body)
    assert metadata["mininn.source_bytes"] == str(len(body))
    assert datetime.fromisoformat(metadata["mininn.uploaded_at"]).tzinfo is not None
    assert (metadata["mininn.architecture"], json.loads(metadata["mininn.config"])) == ("mlp", MLP_CONFIG)


def test_a_safetensors_upload_from_torch_serves_torch_outputs(server: Server, tmp_path: Path) -> None:
    model = _torch_model(22)
    path = tmp_path / "model.safetensors"
    safetensors_torch.save_file(model.state_dict(), str(path))
    response = put_state_dict(server, "mlp", path.read_bytes())
    assert response.status_code == 201, response.text
    assert response.json()["source_format"] == "safetensors"
    served, output = infer(server, "mlp")
    assert served == response.json()["model_version"]
    np.testing.assert_allclose(output, _expected(model), rtol=1e-5, atol=1e-6)


def test_an_npz_upload_serves_its_weights(server: Server) -> None:
    weights = mlp_weights(23)
    buffer = io.BytesIO()
    np.savez(buffer, **weights)
    response = put_state_dict(server, "mlp", buffer.getvalue())
    assert (response.status_code, response.json()["source_format"]) == (201, "npz")
    _, output = infer(server, "mlp")
    np.testing.assert_allclose(output, numpy_mlp(weights, X), rtol=1e-5, atol=1e-5)


def test_a_non_strict_upload_reports_its_keys_and_keeps_the_newest_values_for_missing_ones(
    server: Server,
) -> None:
    base = put_state_dict(server, "mlp-spare", torch_bytes(mlp_weights(24))).json()["model_version"]
    partial = {k: v for k, v in mlp_weights(25).items() if not k.startswith("3.")}
    partial["head.extra"] = np.ones(2, np.float32)
    strict = put_state_dict(server, "mlp-spare", torch_bytes(partial))
    assert strict.status_code == 422
    assert (strict.json()["missing_keys"], strict.json()["unexpected_keys"]) == (
        ["3.weight", "3.bias"],
        ["head.extra"],
    )
    response = put_state_dict(server, "mlp-spare", torch_bytes(partial), strict=False)
    assert response.status_code == 201, response.text
    document = response.json()
    assert (document["strict"], document["missing_keys"], document["unexpected_keys"]) == (
        False,
        ["3.weight", "3.bias"],
        ["head.extra"],
    )
    assert (document["filled_from_version"], document["initialized_keys"]) == (base, [])
    merged = {**mlp_weights(24), **{k: v for k, v in partial.items() if k != "head.extra"}}
    served, output = infer(server, "mlp-spare")
    assert served == document["model_version"]
    np.testing.assert_allclose(output, _expected(torch_mlp(merged)), rtol=1e-5, atol=1e-6)


def test_strip_prefix_removes_data_parallel_and_compile_prefixes(server: Server) -> None:
    weights = mlp_weights(26)
    for prefix in ("module.", "_orig_mod."):
        body = torch_bytes({prefix + k: v for k, v in weights.items()})
        refused = put_state_dict(server, "mlp-spare", body)
        assert refused.status_code == 422
        response = put_state_dict(server, "mlp-spare", body, strip_prefix=prefix)
        assert response.status_code == 201, response.text
        assert (response.json()["strip_prefix"], response.json()["stripped_keys"]) == (prefix, 4)
        np.testing.assert_allclose(infer(server, "mlp-spare")[1], numpy_mlp(weights, X), rtol=1e-5, atol=1e-5)


def test_non_finite_weights_are_accepted_when_allowed(server: Server) -> None:
    weights = mlp_weights(27)
    weights["3.bias"][0] = np.nan
    response = put_state_dict(server, "mlp-spare", torch_bytes(weights), allow_nonfinite=True)
    assert response.status_code == 201, response.text
    assert np.isnan(infer(server, "mlp-spare")[1][:, 0]).all()


@pytest.mark.parametrize("fmt", ["safetensors", "pt", "npz"])
def test_a_version_downloads_in_each_format(server: Server, fmt: str) -> None:
    weights = mlp_weights(28)
    version = put_state_dict(server, "mlp-spare", torch_bytes(weights)).json()["model_version"]
    response = httpx.get(
        f"{server.base_url}/v2/models/mlp-spare/versions/{version}/state_dict", params={"format": fmt}
    )
    assert response.status_code == 200
    suffix = {"safetensors": "safetensors", "pt": "pt", "npz": "npz"}[fmt]
    assert response.headers["content-disposition"] == f'attachment; filename="mlp-spare-v{version}.{suffix}"'
    assert response.headers["x-model-version"] == version
    if fmt == "pt":
        loaded = {
            k: v.numpy() for k, v in torch.load(io.BytesIO(response.content), weights_only=True).items()
        }
    elif fmt == "npz":
        loaded = dict(np.load(io.BytesIO(response.content), allow_pickle=False))
    else:
        loaded = {k: v.numpy() for k, v in safetensors_torch.load(response.content).items()}
        assert response.content == _weights_file(server, "mlp-spare", version).read_bytes()
    assert sorted(loaded) == sorted(weights)
    for key, value in weights.items():
        np.testing.assert_array_equal(loaded[key], value)
    newest = httpx.get(f"{server.base_url}/v2/models/mlp-spare/state_dict")
    assert newest.headers["x-model-version"] == max(server_versions(server, "mlp-spare"), key=int)


def server_versions(server: Server, name: str) -> list[str]:
    return httpx.get(f"{server.base_url}/v2/models/{name}").json()["versions"]


def test_deleting_the_newest_version_serves_the_previous_one(server: Server) -> None:
    first = put_state_dict(server, "mlp-spare", torch_bytes(mlp_weights(29))).json()["model_version"]
    second = put_state_dict(server, "mlp-spare", torch_bytes(mlp_weights(30))).json()["model_version"]
    assert infer(server, "mlp-spare")[0] == second
    url = f"{server.base_url}/v2/models/mlp-spare/versions/{second}"
    assert httpx.delete(url).status_code == 401
    response = httpx.delete(url, headers=AUTH)
    assert response.status_code == 200, response.text
    assert (response.json()["deleted_version"], response.json()["state"]) == (second, "READY")
    assert second not in response.json()["versions"]
    assert not (server.repository / "mlp-spare" / second).exists()
    served, output = infer(server, "mlp-spare")
    assert served == first
    np.testing.assert_allclose(output, numpy_mlp(mlp_weights(29), X), rtol=1e-5, atol=1e-5)
    gone = httpx.delete(url, headers=AUTH)
    assert (gone.status_code, gone.json()["error"]) == (404, f"model 'mlp-spare' has no version {second}")


def test_a_new_model_is_created_then_served_after_its_first_upload(server: Server) -> None:
    url = f"{server.base_url}/v2/repository/models/fresh"
    spec = {"architecture": "mlp", "config": MLP_CONFIG, "description": "made over HTTP"}
    created = httpx.put(url, json=spec, headers=AUTH)
    assert created.status_code == 201, created.text
    assert (created.json()["created"], created.json()["state"]) == (True, "UNAVAILABLE")
    assert created.json()["reason"].startswith("waiting for its first version: ")
    assert created.json()["load_error"] == ""
    assert json.loads((server.repository / "fresh" / "model.json").read_text()) == spec
    response = put_state_dict(server, "fresh", torch_bytes(mlp_weights(31)))
    assert (response.status_code, response.json()["model_version"], response.json()["state"]) == (
        201,
        "1",
        "READY",
    )
    np.testing.assert_allclose(infer(server, "fresh")[1], numpy_mlp(mlp_weights(31), X), rtol=1e-5, atol=1e-5)
    replaced = httpx.put(url, json={**spec, "description": "again"}, headers=AUTH)
    assert (replaced.status_code, replaced.json()["created"], replaced.json()["state"]) == (
        200,
        False,
        "READY",
    )


# -- bad uploads: a status, a message, and nothing changed -----------------------


class Evil:
    """Unpickling this would run a shell command that leaves a marker file."""

    marker: Path

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def _truncated_safetensors() -> bytes:
    buffer = io.BytesIO()
    buffer.write(safetensors_torch.save({k: torch.from_numpy(v) for k, v in mlp_weights(40).items()}))
    return buffer.getvalue()[:-50]


def _bad_uploads(marker: Path) -> dict[str, tuple[bytes, dict[str, Any], int, str]]:
    renamed = dict(mlp_weights(41))
    renamed["0.weights"] = renamed.pop("0.weight")
    wider = {**mlp_weights(42), "0.weight": np.ones((9, 4), np.float32), "0.bias": np.ones(9, np.float32)}
    nan = mlp_weights(43)
    nan["0.weight"][1, 2] = np.nan
    nan["3.bias"][:] = np.inf
    ints = {**mlp_weights(44), "0.bias": np.arange(8)}
    evil = Evil()
    evil.marker = marker
    hostile = io.BytesIO()
    torch.save({"0.weight": evil}, hostile)
    listed = io.BytesIO()
    torch.save([torch.ones(2)], listed)
    return {
        "wrong keys": (
            torch_bytes(renamed),
            {},
            422,
            FIT
            + 'Missing key(s) in state_dict: "0.weight". \n\tUnexpected key(s) in state_dict: "0.weights". ',
        ),
        "wrong shapes": (
            torch_bytes(wider),
            {},
            422,
            FIT + "size mismatch for 0.weight: copying a param with shape mininn.Size([9, 4]) from "
            "checkpoint, the shape in current model is mininn.Size([8, 4]).\n\tsize mismatch for 0.bias: "
            "copying a param with shape mininn.Size([9]) from checkpoint, the shape in current model is "
            "mininn.Size([8]).",
        ),
        "wrong dtype": (
            torch_bytes(ints),
            {},
            422,
            "the uploaded state dict does not fit architecture 'mlp': dtype mismatch for 0.bias: copying a "
            "int64 tensor from the checkpoint into a float32 tensor of the model",
        ),
        "NaN weights": (
            torch_bytes(nan),
            {},
            422,
            "the uploaded state dict has NaN or infinite values in 2 tensor(s): 0.weight (1), 3.bias (3); "
            "fix the weights, or add ?allow_nonfinite=true to upload them anyway",
        ),
        "truncated file": (
            _truncated_safetensors(),
            {},
            400,
            "cannot read the uploaded safetensors checkpoint: ",
        ),
        "hostile pickle": (
            hostile.getvalue(),
            {},
            400,
            "cannot read the uploaded pt checkpoint: refused pickle global posix.system: checkpoints may "
            "hold only tensors and plain containers (dict, list, tuple, str, numbers)",
        ),
        "not a checkpoint": (
            b"hello, world" * 10,
            {},
            400,
            "the body is not a safetensors, .npz, PyTorch .pt or GGUF checkpoint: ",
        ),
        "not a state dict": (
            listed.getvalue(),
            {},
            422,
            "the uploaded pt file holds a list, not a state dict (a dict of parameter names to tensors)",
        ),
        "empty body": (
            b"",
            {},
            400,
            "the body is empty: send the bytes of a safetensors, .npz, PyTorch .pt or GGUF file",
        ),
        "bad option": (torch_bytes(mlp_weights(45)), {"strict": "maybe"}, 400, "query parameter 'strict': "),
    }


BAD_UPLOADS = list(_bad_uploads(Path("/unused")))


@pytest.mark.parametrize("case", BAD_UPLOADS)
def test_a_bad_upload_gets_its_status_and_message_and_changes_nothing(
    server: Server, case: str, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    body, params, status, message = _bad_uploads(marker)[case]
    before, served_before = tree_digest(server.repository), infer(server, "mlp")
    response = put_state_dict(server, "mlp", body, **params)
    assert response.status_code == status, response.text
    assert response.json()["error"].startswith(message)
    assert message.endswith(": ") or response.json()["error"] == message
    assert tree_digest(server.repository) == before
    version, output = infer(server, "mlp")
    assert version == served_before[0]
    np.testing.assert_array_equal(output, served_before[1])
    assert not marker.exists()


def test_a_mismatch_lists_the_keys_as_json_and_matches_torch(server: Server) -> None:
    weights = {**mlp_weights(46), "0.weight": np.ones((9, 4), np.float32), "extra": np.ones(1, np.float32)}
    del weights["3.bias"]
    response = put_state_dict(server, "mlp", torch_bytes(weights))
    assert response.status_code == 422
    document = response.json()
    assert document["missing_keys"] == ["3.bias"]
    assert document["unexpected_keys"] == ["extra"]
    assert document["size_mismatches"] == [
        {"key": "0.weight", "checkpoint_shape": [9, 4], "model_shape": [8, 4]}
    ]
    assert document["dtype_mismatches"] == []
    with pytest.raises(RuntimeError) as torch_error:
        torch_mlp(mlp_weights(1)).load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()})
    torch_lines = str(torch_error.value).replace("torch.Size", "mininn.Size").split("\n\t")[1:]
    assert document["error"].split("\n\t")[1:] == torch_lines


def test_non_finite_values_are_listed_as_json(server: Server) -> None:
    weights = mlp_weights(47)
    weights["0.bias"][:2] = [np.inf, -np.inf]
    response = put_state_dict(server, "mlp", torch_bytes(weights))
    assert (response.status_code, response.json()["nonfinite"]) == (422, [{"key": "0.bias", "count": 2}])


def test_an_upload_over_the_limit_is_refused_from_its_content_length(server: Server) -> None:
    before = tree_digest(server.repository)
    head = (
        f"PUT /v2/models/mlp/state_dict HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
        f"Content-Length: {100 * LIMIT}\r\n\r\n"
    ).encode()
    status, response = raw_request(server, head, [b"\0" * 1024])  # the rest is never sent
    assert status == 413
    assert json.loads(response.partition(b"\r\n\r\n")[2]) == {
        "error": f"upload of {100 * LIMIT} bytes is over the {LIMIT}-byte limit (MININN_MAX_UPLOAD_BYTES)"
    }
    assert tree_digest(server.repository) == before


def test_a_streamed_upload_over_the_limit_is_refused_while_streaming(server: Server) -> None:
    before = tree_digest(server.repository)
    head = (
        f"PUT /v2/models/mlp/state_dict HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode()
    piece = 64 * 1024
    chunks = [f"{piece:x}\r\n".encode() + b"\1" * piece + b"\r\n" for _ in range(LIMIT // piece + 1)]
    status, response = raw_request(server, head, chunks)  # no terminating chunk: the server stops first
    assert status == 413
    assert json.loads(response.partition(b"\r\n\r\n")[2]) == {
        "error": f"upload is over the {LIMIT}-byte limit (MININN_MAX_UPLOAD_BYTES)"
    }
    assert tree_digest(server.repository) == before


def test_a_client_that_leaves_mid_upload_leaves_nothing_behind(server: Server) -> None:
    before = tree_digest(server.repository)
    head = (
        f"PUT /v2/models/mlp/state_dict HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
        f"Content-Length: {LIMIT - 1}\r\n\r\n"
    ).encode()
    with socket.create_connection((server.host, server.port)) as sock:
        sock.sendall(head + b"\0" * (LIMIT // 2))
        wait_until(lambda: list((server.repository / "mlp").glob(".upload-*")), 5, "the upload to start")
    wait_until(lambda: tree_digest(server.repository) == before, 5, "the staging folder to go")
    assert infer(server, "mlp")[0] in server_versions(server, "mlp")
    assert "ClientDisconnect" not in server.log.read_text()


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        ("/v2/models/%2E%2E/state_dict", "'..'"),
        ("/v2/models/..%2F..%2Fetc/state_dict", "'../../etc'"),
        ("/v2/models//etc/passwd/state_dict", "'/etc/passwd'"),
        ("/v2/models/a%00b/state_dict", "'a\\x00b'"),
        ("/v2/models/" + "m" * 65 + "/state_dict", "'" + "m" * 65 + "'"),
        ("/v2/repository/models/..%2Fescape", "'../escape'"),
        ("/v2/models/..%2Fmlp/versions/1", "'../mlp'"),
    ],
)
def test_a_bad_model_name_is_400_and_touches_nothing(server: Server, path: str, shown: str) -> None:
    before = tree_digest(server.repository.parent)
    method = "DELETE" if "/versions/" in path else "PUT"
    body = torch_bytes(mlp_weights(48))
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    status, response = raw_request(server, head, [body])
    assert status == 400
    error = json.loads(response.partition(b"\r\n\r\n")[2])["error"]
    assert error == f"invalid model name {shown}: " + NAME_RULE
    assert tree_digest(server.repository.parent) == before


def test_writes_need_the_write_key(server: Server) -> None:
    before = tree_digest(server.repository)
    body = torch_bytes(mlp_weights(49))
    url = f"{server.base_url}/v2/models/mlp/state_dict"
    missing = httpx.put(url, content=body)
    assert (missing.status_code, missing.headers["www-authenticate"]) == (401, "Bearer")
    assert missing.json() == {
        "error": "this write endpoint needs 'Authorization: Bearer <key>' (MININN_API_KEY is set)"
    }
    wrong = httpx.put(url, content=body, headers={"Authorization": "Bearer nope"})
    assert wrong.json() == {"error": "the bearer key is not valid for this write endpoint"}
    assert wrong.status_code == 403
    spec = httpx.put(f"{server.base_url}/v2/repository/models/mlp", json={"architecture": "mlp"})
    assert spec.status_code == 401
    assert tree_digest(server.repository) == before


def test_an_unknown_model_is_404_with_how_to_create_it(server: Server) -> None:
    response = put_state_dict(server, "ghost", torch_bytes(mlp_weights(50)))
    assert response.status_code == 404
    unknown = "Request for unknown model: 'ghost' is not found; available models: "
    assert response.json()["error"].startswith(unknown)
    assert response.json()["error"].endswith(
        "; create it first with PUT /v2/repository/models/ghost (its model.json)"
    )
    assert not (server.repository / "ghost").exists()


def test_a_bad_model_json_is_422_with_the_accepted_keys(server: Server) -> None:
    before = tree_digest(server.repository)
    url = f"{server.base_url}/v2/repository/models/mlp"
    bad_key = httpx.put(url, json={"architecture": "mlp", "config": {"hiden": 3}}, headers=AUTH)
    assert bad_key.status_code == 422
    assert bad_key.json() == {
        "error": "unknown config key 'hiden' for architecture 'mlp'; accepted keys: activation, dropout, "
        "hidden_sizes, in_features, out_features",
        "accepted_keys": ["activation", "dropout", "hidden_sizes", "in_features", "out_features"],
    }
    unknown = httpx.put(url, json={"architecture": "nope"}, headers=AUTH)
    assert unknown.status_code == 422
    assert unknown.json()["error"].startswith("unknown architecture 'nope'; available: ")
    assert "mlp" in unknown.json()["architectures"]
    bad_value = httpx.put(url, json={"architecture": "mlp", "config": {"in_features": -1}}, headers=AUTH)
    assert bad_value.status_code == 422
    assert bad_value.json()["error"].startswith("invalid value -1 for config key 'in_features'")
    not_json = httpx.put(url, content=b"{", headers=AUTH)
    assert not_json.status_code == 400
    assert tree_digest(server.repository) == before


def test_tritonclient_load_and_unload_send_the_key_as_a_header(server: Server) -> None:
    http = pytest.importorskip("tritonclient.http")
    from tritonclient.utils import InferenceServerException

    client = http.InferenceServerClient(server.url)
    with pytest.raises(InferenceServerException, match="needs 'Authorization: Bearer <key>'"):
        client.unload_model("mlp-spare")
    client.unload_model("mlp-spare", headers=AUTH)
    assert not client.is_model_ready("mlp-spare")
    client.load_model("mlp-spare", headers=AUTH)
    assert client.is_model_ready("mlp-spare")
    client.close()
