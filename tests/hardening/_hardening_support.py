"""Helpers of the hardening tests: checkpoint seeds, a raw ASGI call, and the shared test repository.

The repository is the service tests' ``mlp`` one (``tests/app/_app_support.py``,
imported through ``conftest.py``), so every request here has a known good form
to mutate.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

API_KEY = "hardening-key-7f3a"
FUZZ_SCALE = int(os.environ.get("MININN_FUZZ_SCALE", "1"))
"""Multiplies every fuzz test's example count: CI runs 1; a longer campaign sets e.g. 50."""


def examples(count: int) -> int:
    """``count`` Hypothesis examples, times ``MININN_FUZZ_SCALE``."""
    return count * FUZZ_SCALE


MLP_INPUT = {"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [0.5, -1.0, 2.0, 0.25]}
INFER_BODY: dict[str, Any] = {"inputs": [MLP_INPUT]}


def bearer(key: str = API_KEY) -> dict[str, str]:
    """The ``Authorization`` header carrying ``key``."""
    return {"Authorization": f"Bearer {key}"}


def mlp_state(seed: int) -> dict[str, np.ndarray]:
    """A state dict of the test ``mlp`` (4 -> 8 -> 3) drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    shapes = {"0.weight": (8, 4), "0.bias": (8,), "3.weight": (3, 8), "3.bias": (3,)}
    return {key: rng.standard_normal(shape).astype(np.float32) for key, shape in shapes.items()}


def rewrite_zip_member(data: bytes, member: str, content: bytes) -> bytes:
    """``data`` (a zip) with ``member`` replaced by ``content``, CRCs and sizes recomputed.

    Mutating a member through this keeps the archive itself valid, so the
    mutation reaches the member's own parser (the unpickler, the .npy header
    reader) instead of stopping at zipfile's CRC check.
    """
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            payload = content if info.filename == member else src.read(info)
            copy = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            copy.compress_type = info.compress_type
            dst.writestr(copy, payload)
    return out.getvalue()


def zip_member(data: bytes, suffix: str) -> str:
    """The name of the first member of zip ``data`` that ends with ``suffix``."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return next(name for name in zf.namelist() if name.endswith(suffix))


def read_zip_member(data: bytes, member: str) -> bytes:
    """The bytes of ``member`` in zip ``data``."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return zf.read(member)


def safetensors_parts(data: bytes) -> tuple[dict[str, Any], bytes]:
    """The JSON header and the data section of a safetensors file."""
    n = int.from_bytes(data[:8], "little")
    return json.loads(data[8 : 8 + n]), data[8 + n :]


def safetensors_bytes(header: Mapping[str, Any], payload: bytes) -> bytes:
    """A safetensors file from a header (any JSON) and a data section."""
    text = json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text + payload


@dataclass(frozen=True)
class RawResponse:
    """What an ASGI app sent back."""

    status: int
    headers: dict[bytes, bytes]
    body: bytes


def asgi_request(
    client: Any,
    method: str,
    path: str,
    *,
    body: bytes = b"",
    headers: Sequence[tuple[bytes, bytes]] = (),
    query: bytes = b"",
    raw_path: bytes | None = None,
    timeout: float = 30.0,
) -> RawResponse:
    """One request straight into a started ``TestClient``'s app, header bytes exactly as given.

    It runs on the client's own event loop (its portal), where the app's
    lifespan started the service; httpx would re-encode the header values.

    Raises:
        TimeoutError: the app did not answer within ``timeout`` seconds (a hang).
    """
    raw = path.encode("utf-8", "surrogateescape") if raw_path is None else raw_path
    return client.portal.call(_asgi, client.app, method, path, raw, body, headers, query, timeout)


async def _asgi(
    app: Any,
    method: str,
    path: str,
    raw_path: bytes,
    body: bytes,
    headers: Sequence[tuple[bytes, bytes]],
    query: bytes,
    timeout: float,
) -> RawResponse:
    pending = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict[str, Any]] = []
    finished = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if pending:
            return pending.pop()
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            finished.set()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": raw_path,
        "query_string": query,
        "root_path": "",
        "headers": [(k.lower(), v) for k, v in headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 80),
        "state": {},
    }
    await asyncio.wait_for(app(scope, receive, send), timeout)
    start = next(m for m in sent if m["type"] == "http.response.start")
    content = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return RawResponse(start["status"], dict(start.get("headers", [])), content)
