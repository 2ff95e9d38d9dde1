"""deploy/docker/healthcheck.py: exit 0 exactly when the server answers ready."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from _deploy_support import DOCKER_DIR, free_port, load_script

healthcheck = load_script("healthcheck")
SCRIPT = DOCKER_DIR / "healthcheck.py"


class _Ready(BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.send_response(self.status if self.path == "/v2/health/ready" else 404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fake_server() -> Iterator[tuple[int, type[_Ready]]]:
    handler = type("Handler", (_Ready,), {"status": 200})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], handler
    finally:
        server.shutdown()
        server.server_close()


def run(port: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT)],
        env={"MININN_PORT": str(port)},
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_the_url_is_the_ready_endpoint_on_the_configured_port() -> None:
    assert healthcheck.ready_url({"MININN_PORT": "9001"}) == "http://127.0.0.1:9001/v2/health/ready"
    assert healthcheck.ready_url({}) == "http://127.0.0.1:8000/v2/health/ready"
    assert healthcheck.ready_url({"PORT": "8080"}) == "http://127.0.0.1:8080/v2/health/ready"  # Knative's
    assert healthcheck.ready_url({"PORT": "8080", "MININN_PORT": "9001"}).endswith(":9001/v2/health/ready")


def test_exits_0_when_ready(fake_server: tuple[int, type[_Ready]]) -> None:
    port, _ = fake_server
    result = run(port)
    assert (result.returncode, result.stderr) == (0, "")


def test_exits_1_while_the_server_is_not_ready(fake_server: tuple[int, type[_Ready]]) -> None:
    port, handler = fake_server
    handler.status = 503
    result = run(port)
    assert result.returncode == 1
    assert result.stderr == (
        f"not ready: http://127.0.0.1:{port}/v2/health/ready: HTTP Error 503: Service Unavailable\n"
    )


def test_exits_1_when_nothing_listens() -> None:
    port = free_port()
    result = run(port)
    assert result.returncode == 1
    assert result.stderr.startswith(f"not ready: http://127.0.0.1:{port}/v2/health/ready: ")
    assert "Connection refused" in result.stderr
