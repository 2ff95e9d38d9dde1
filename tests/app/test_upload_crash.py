"""A server killed (SIGKILL) in the middle of a large upload restarts on the previous version, clean."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import numpy as np
import pytest
from _app_support import make_repository, mlp_weights, numpy_mlp, run_server, wait_until
from _upload_support import KEY, X, infer, tree_digest

from app.store.repository import ModelRepository

DECLARED = 64 * 2**20  # the upload says it is 64 MiB; the server dies after a few of them


def _staged_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.glob(".upload-*/upload.part"))


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.mark.slow
def test_a_server_killed_mid_upload_restarts_on_the_previous_version(tmp_path: Path) -> None:
    repository = make_repository(tmp_path / "model_repository")
    before = tree_digest(repository)
    env = {"MININN_API_KEY": KEY, "MININN_SEED_REPOSITORY": "false"}
    with run_server(repository, tmp_path / "first.log", **env) as server:
        server.wait_ready(60)
        sock = socket.create_connection((server.host, server.port))
        head = (
            f"PUT /v2/models/mlp/state_dict HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
            f"Content-Type: application/octet-stream\r\nContent-Length: {DECLARED}\r\n\r\n"
        )
        sock.sendall(head.encode())
        piece = b"\x07" * (256 * 1024)
        started = time.monotonic()
        sent = 0
        while time.monotonic() - started < 1.5 or sent < 4 * 2**20:  # slowly: a few MiB over 1.5 s
            sock.sendall(piece)
            sent += len(piece)
            time.sleep(0.05)
        wait_until(lambda: _staged_bytes(repository / "mlp") >= 2 * 2**20, 5, "the body to reach the disk")
        server.process.kill()  # SIGKILL, mid-upload
        server.process.wait()
        sock.close()
        assert server.process.returncode == -9
    left = _leftovers(repository / "mlp")
    assert len(left) == 2 and {name.endswith(".lock") for name in left} == {True, False}  # folder and lock
    assert ModelRepository(repository).versions("mlp") == [1, 2]  # a staging folder is never a version

    with run_server(repository, tmp_path / "second.log", **env) as server:
        server.wait_ready(60)
        version, output = infer(server, "mlp")
        assert version == "2"
        np.testing.assert_allclose(output, numpy_mlp(mlp_weights(2), X), rtol=1e-5, atol=1e-5)
        assert _leftovers(repository / "mlp") == []  # removed at start-up: its writer is dead
        assert tree_digest(repository) == before
