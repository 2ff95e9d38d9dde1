"""Shared by the model explorer's tests: the browser, its screens, the write key, direct API calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import numpy as np

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WIDE = {"width": 1280, "height": 800}
NARROW = {"width": 390, "height": 844}
WRITE_KEY = "explorer-write-key"
REPO_ROOT = Path(__file__).resolve().parents[3]
SCREENSHOTS = REPO_ROOT / "docs" / "screenshots"


def api(server: Any) -> httpx.Client:
    """A client of the running server."""
    return httpx.Client(base_url=server.base_url, timeout=30)


def infer_json(server: Any, model: str, body: dict[str, Any], route: str = "infer") -> dict[str, Any]:
    """The server's JSON answer to ``body`` on ``route`` (asserting a 200)."""
    with api(server) as client:
        response = client.post(f"/v2/models/{model}/{route}", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def output(response: dict[str, Any], name: str) -> np.ndarray:
    """Output ``name`` of a JSON inference response as a float64 array of its shape."""
    found = next(o for o in response["outputs"] if o["name"] == name)
    return np.asarray(found["data"], dtype=np.float64).reshape(found["shape"])
