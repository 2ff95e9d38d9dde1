"""Helpers of the upload tests: a keyed server, uploads over HTTP, repository digests, server memory."""

from __future__ import annotations

import contextlib
import hashlib
import io
import socket
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from _app_support import IN_FEATURES, Server, make_repository, run_server

KEY = "upload-test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
X = np.linspace(-1.0, 1.0, 3 * IN_FEATURES, dtype=np.float32).reshape(3, IN_FEATURES)


@contextlib.contextmanager
def keyed_server(folder: Path, *, repository: Path | None = None, **env: str) -> Iterator[Server]:
    """A real ``python -m app`` with the write key :data:`KEY`, on the test repository (or ``repository``)."""
    repo = repository if repository is not None else make_repository(folder / "model_repository")
    settings = {"MININN_API_KEY": KEY, "MININN_SEED_REPOSITORY": "false", **env}
    with run_server(repo, folder / "server.log", **settings) as server:
        server.wait_ready(60)
        yield server


def put_state_dict(server: Server, name: str, body: bytes, **params: Any) -> httpx.Response:
    """``PUT /v2/models/{name}/state_dict`` with the write key."""
    query = {k: str(v).lower() if isinstance(v, bool) else v for k, v in params.items()}
    return httpx.put(
        f"{server.base_url}/v2/models/{name}/state_dict", content=body, params=query, headers=AUTH, timeout=60
    )


def infer(server: Server, name: str, x: np.ndarray = X, version: int | None = None) -> tuple[str, np.ndarray]:
    """The served version and output of ``name`` for ``x`` (JSON, a fresh connection)."""
    path = f"/v2/models/{name}" + (f"/versions/{version}" if version is not None else "") + "/infer"
    body = {
        "inputs": [{"name": "input", "shape": list(x.shape), "datatype": "FP32", "data": x.ravel().tolist()}]
    }
    response = httpx.post(server.base_url + path, json=body, timeout=30)
    assert response.status_code == 200, response.text
    document = response.json()
    output = document["outputs"][0]
    return document["model_version"], np.asarray(output["data"], np.float32).reshape(output["shape"])


def torch_bytes(state_dict: Mapping[str, Any]) -> bytes:
    """``torch.save`` of ``state_dict`` (NumPy arrays become torch tensors)."""
    import torch

    buffer = io.BytesIO()
    torch.save({k: torch.as_tensor(v) for k, v in state_dict.items()}, buffer)
    return buffer.getvalue()


def tree_digest(root: Path) -> dict[str, str]:
    """Every file (sha256) and folder under ``root``, by relative path."""
    digest = {}
    for path in sorted(root.rglob("*")):
        relative = str(path.relative_to(root))
        digest[relative] = "<dir>" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return digest


def sha256(data: bytes) -> str:
    """The hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def raw_request(
    server: Server, head: bytes, body_parts: list[bytes] = (), timeout: float = 10
) -> tuple[int, bytes]:
    """Send a raw HTTP/1.1 request (no client-side normalisation); its status and whole response."""
    with socket.create_connection((server.host, server.port), timeout=timeout) as sock:
        sock.sendall(head)
        for part in body_parts:
            sock.sendall(part)
        data = b""
        with contextlib.suppress(ConnectionResetError, socket.timeout):
            while chunk := sock.recv(65536):
                data += chunk
                if b"\r\n\r\n" in data and _complete(data):
                    break
    return int(data.split(b" ", 2)[1]), data


def _complete(data: bytes) -> bool:
    head, _, body = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":", 1)[1])
    return False


def rss_bytes(pid: int) -> int:
    """Resident memory (VmRSS) of process ``pid``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")
