"""The real Dockerfile and docker-compose.yml under Podman, driven from the host with tritonclient.

- ``docker compose up``: the server becomes healthy, serves the image's demo models with
  in-process mininn's outputs, runs as the non-root user without torch, takes a model
  trained in torch (uploaded, or copied into the volume where this build has no upload
  endpoint) and still serves it after ``down`` and ``up`` (the named volume keeps it);
- ``--profile scale``: nginx balances round robin over three replicas, and an upload
  through it is served by every replica.

Skipped with the reason when Podman or podman-compose is missing; CI installs both.
"""

from __future__ import annotations

import io
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from _podman import ComposeProject, Images, build_images, podman, running, unavailable

torch = pytest.importorskip("torch")
httpclient = pytest.importorskip("tritonclient.http")

pytestmark = [pytest.mark.container, pytest.mark.slow]

MLP_CONFIG = {"in_features": 4, "hidden_sizes": [8], "out_features": 3}


@pytest.fixture(scope="session")
def images(tmp_path_factory: pytest.TempPathFactory) -> Images:
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    return build_images(tmp_path_factory.mktemp("build"))


def project(
    images: Images, tmp_path: Path, server_settings: dict[str, str] | None = None, **env: str
) -> ComposeProject:
    return ComposeProject(f"mininn-e2e-{uuid.uuid4().hex[:10]}", tmp_path, images, server_settings, **env)


# --- references --------------------------------------------------------------------------------


def torch_mlp(seed: int) -> Any:
    """torch's ``Sequential(Linear, ReLU, Dropout, Linear, Dropout)``: mininn's ``mlp`` layout."""
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(4, 8),
        torch.nn.ReLU(),
        torch.nn.Dropout(0.0),
        torch.nn.Linear(8, 3),
        torch.nn.Dropout(0.0),
    ).eval()


def torch_checkpoint(model: Any) -> bytes:
    """``torch.save(model.state_dict())`` as bytes (a .pt zip)."""
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return buffer.getvalue()


def digits_in_process(images: np.ndarray) -> dict[str, np.ndarray]:
    """The ``digits`` demo model's outputs from in-process mininn."""
    import mininn
    import models
    from models import digits

    servable = models.servable(digits.ARCHITECTURE, digits.CONFIG_DICT)
    servable.module.load_state_dict(mininn.load(digits.WEIGHTS_PATH))
    servable.module.eval()
    with mininn.no_grad():
        return servable.predict({"image": images})


# --- talking to the server ---------------------------------------------------------------------


def has_uploads(base: str) -> bool:
    """Whether this build serves the upload endpoints (another part of the project adds them)."""
    paths = httpx.get(f"{base}/openapi.json", timeout=10).json()["paths"]
    return "put" in paths.get("/v2/models/{model_name}/state_dict", {}) and "put" in paths.get(
        "/v2/repository/models/{model_name}", {}
    )


def upload(base: str, key: str, name: str, model: Any) -> None:
    """Create ``name`` (an ``mlp``) and upload ``model``'s state dict, as a user would."""
    auth = {"Authorization": f"Bearer {key}"}
    spec = {"architecture": "mlp", "config": MLP_CONFIG}
    response = httpx.put(f"{base}/v2/repository/models/{name}", json=spec, headers=auth, timeout=30)
    assert response.status_code in (200, 201), response.text
    response = httpx.put(
        f"{base}/v2/models/{name}/state_dict", content=torch_checkpoint(model), headers=auth, timeout=60
    )
    assert response.status_code in (200, 201), response.text


def copy_into_volume(container: str, name: str, model: Any, tmp_path: Path) -> None:
    """Put an ``mlp`` model folder with ``model``'s torch checkpoint into the container's volume."""
    folder = tmp_path / name
    (folder / "1").mkdir(parents=True)
    (folder / "model.json").write_text(json.dumps({"architecture": "mlp", "config": MLP_CONFIG}))
    (folder / "1" / "weights.pt").write_bytes(torch_checkpoint(model))
    podman("cp", str(folder), f"{container}:/models/{name}")


def wait_model_ready(client: Any, name: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not client.is_model_ready(name):
        assert time.monotonic() < deadline, f"model {name!r} not ready within {timeout} s"
        time.sleep(0.2)


def infer_mlp(client: Any, name: str, x: np.ndarray, capture: str | None = None) -> Any:
    tensor = httpclient.InferInput("input", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x)
    return client.infer(name, [tensor], parameters={"capture": capture} if capture else None)


# --- docker compose up -------------------------------------------------------------------------


def test_compose_serves_demo_and_torch_models_stops_gracefully_and_keeps_uploads_across_down_and_up(
    images: Images, tmp_path: Path
) -> None:
    stack = project(images, tmp_path)
    server = stack.container("server")
    url, base = f"127.0.0.1:{stack.port}", f"http://127.0.0.1:{stack.port}"
    model, x = torch_mlp(0), np.random.default_rng(0).standard_normal((5, 4), dtype=np.float32)
    with torch.no_grad():
        expected, first_layer = model(torch.from_numpy(x)).numpy(), model[0](torch.from_numpy(x)).numpy()
    with running(stack):
        seconds = stack.wait_healthy(server)
        assert seconds < 60, f"healthy only after {seconds:.1f} s"
        assert stack.exec_python(server, "import os; print(os.getuid())").strip() == "10001"
        assert (
            stack.exec_python(server, "import importlib.util as u; print(u.find_spec('torch'))").strip()
            == "None"
        )

        with httpclient.InferenceServerClient(url) as client:
            assert client.is_server_live() and client.is_server_ready()
            assert {row["name"] for row in client.get_model_repository_index()} >= {"digits", "minilm"}
            digits = np.random.default_rng(1).random((4, 1, 28, 28), dtype=np.float32)
            tensor = httpclient.InferInput("image", list(digits.shape), "FP32")
            tensor.set_data_from_numpy(digits)
            result = client.infer("digits", [tensor])
            for name, reference in digits_in_process(digits).items():
                np.testing.assert_allclose(result.as_numpy(name), reference, rtol=1e-5, atol=1e-6)

            text = httpclient.InferInput("text", [2], "BYTES")
            text.set_data_from_numpy(
                np.array([b"A man plays a guitar.", b"Someone makes music."], dtype=object)
            )
            embedding = client.infer("minilm", [text]).as_numpy("embedding")
            assert embedding.shape == (2, 384)
            np.testing.assert_allclose(np.linalg.norm(embedding, axis=1), 1.0, rtol=1e-5)

            if has_uploads(base):
                upload(base, stack.api_key, "e2e-mlp", model)
            else:
                copy_into_volume(server, "e2e-mlp", model, tmp_path)
                client.load_model("e2e-mlp", headers={"Authorization": f"Bearer {stack.api_key}"})
            wait_model_ready(client, "e2e-mlp")
            result = infer_mlp(client, "e2e-mlp", x, capture="0")
            np.testing.assert_allclose(result.as_numpy("output"), expected, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(result.as_numpy("0:output"), first_layer, rtol=1e-5, atol=1e-6)

        started = time.monotonic()
        stack.compose("stop", "-t", "30")  # SIGTERM; SIGKILL only after 30 s
        assert time.monotonic() - started < 25
        state = stack.inspect(server)["State"]
        assert (state["Status"], state["ExitCode"]) == ("exited", 0)
        assert "Finished server process" in stack.logs(server)

        stack.compose("down", "-t", "30")  # containers go, the named volume stays
        stack.compose("up", "-d")
        stack.wait_healthy(server)
        with httpclient.InferenceServerClient(url) as client:
            wait_model_ready(client, "e2e-mlp")
            result = infer_mlp(client, "e2e-mlp", x)
            np.testing.assert_allclose(result.as_numpy("output"), expected, rtol=1e-5, atol=1e-6)


def test_the_image_adds_less_than_250_mb_to_its_base(images: Images) -> None:
    from _podman import BASE_IMAGE

    size = int(podman("image", "inspect", images.server, "--format", "{{.Size}}").stdout)
    base = int(podman("image", "inspect", BASE_IMAGE, "--format", "{{.Size}}").stdout)
    assert size - base < 250e6, f"{(size - base) / 1e6:.0f} MB above the base image"


# --- docker compose --profile scale up ---------------------------------------------------------


@pytest.fixture(scope="module")
def scaled(images: Images, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ComposeProject]:
    # each replica logs the requests it answers (off by default), so a test can count them
    access_log = {"MININN_ACCESS_LOG": "true"}
    stack = project(images, tmp_path_factory.mktemp("scale"), access_log, DEPLOY_REPLICAS="3")
    with running(stack, "replica", "balancer", profile="scale"):  # (`up` alone adds `server`)
        for index in (1, 2, 3):
            stack.wait_healthy(stack.container("replica", index))
        balancer = f"http://127.0.0.1:{stack.balancer_port}/v2/health/ready"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(balancer, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "nginx did not answer ready"
            time.sleep(0.2)
        yield stack


def test_nginx_spreads_requests_over_every_replica(scaled: ComposeProject) -> None:
    marker = uuid.uuid4().hex
    for _ in range(9):
        response = httpx.get(
            f"http://127.0.0.1:{scaled.balancer_port}/v2/models/digits?probe={marker}", timeout=10
        )
        assert response.status_code == 200 and response.json()["name"] == "digits"
    counts = [scaled.logs(scaled.container("replica", i)).count(marker) for i in (1, 2, 3)]
    assert sum(counts) == 9 and min(counts) >= 1, counts


def test_an_upload_through_nginx_is_served_by_every_replica(scaled: ComposeProject) -> None:
    base = f"http://127.0.0.1:{scaled.balancer_port}"
    if not has_uploads(base):
        pytest.skip("this build has no upload endpoints (PUT /v2/models/{m}/state_dict) yet")
    model, x = torch_mlp(1), np.random.default_rng(2).standard_normal((3, 4), dtype=np.float32)
    with torch.no_grad():
        expected = model(torch.from_numpy(x)).numpy()
    upload(base, scaled.api_key, "shared-mlp", model)
    request = json.dumps(
        {"inputs": [{"name": "input", "shape": [3, 4], "datatype": "FP32", "data": x.ravel().tolist()}]}
    )
    probe = (
        "import json, time, urllib.request\n"
        "for _ in range(100):\n"
        "    try:\n"
        "        r = urllib.request.urlopen(urllib.request.Request('http://127.0.0.1:8000/v2/models/shared-mlp/infer',"
        f" data={request!r}.encode()), timeout=5)\n"
        "        print(json.dumps(json.load(r)['outputs'][0]['data'])); break\n"
        "    except Exception:\n"
        "        time.sleep(0.1)\n"
    )
    for index in (1, 2, 3):  # asked inside each replica: no balancer in between
        output = scaled.exec_python(scaled.container("replica", index), probe)
        assert output, f"replica {index} did not serve the upload within 10 s"
        np.testing.assert_allclose(np.array(json.loads(output)).reshape(3, 3), expected, rtol=1e-5, atol=1e-6)
