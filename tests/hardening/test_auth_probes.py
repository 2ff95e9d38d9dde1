"""Probing the bearer-key checks of every write route (and, with a read key, of every read route).

The routes are enumerated from the app's own router, so a write route added
later is probed without editing this file: every route whose methods are not
only GET/HEAD, except the read-only POSTs (``infer``, ``activations`` and the
repository index), must refuse a request without the exact key (401 without
one, 403 with any other) and must change nothing when it does.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from _app_support import make_repository, start_client
from _hardening_support import API_KEY, INFER_BODY, asgi_request
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.testclient import TestClient

from app import Settings, create_app

READ_ONLY_POSTS = re.compile(
    r".*/(infer|activations|generate|generate_stream)$|^/v2/repository/index$|^(/openai)?/v1/.*completions$"
)
PATH_VALUES = {"model_name": "mlp", "model_version": "1", "file_name": "labels.txt", "vector_name": "joy"}


def _write_routes() -> list[tuple[str, str]]:
    app = create_app(Settings(model_repository=Path("unused"), seed_repository=False))
    routes = []
    for context in iter_route_contexts(app.routes):  # every route, included routers flattened
        route = context.route
        if not isinstance(route, APIRoute):
            assert context.methods is None or context.methods <= {"GET", "HEAD"}, context.path
            continue
        for method in sorted(route.methods - {"GET", "HEAD"}):
            if method == "POST" and READ_ONLY_POSTS.match(route.path):
                continue
            routes.append(
                (method, re.sub(r"\{(\w+)(:\w+)?\}", lambda m: PATH_VALUES[m.group(1)], route.path))
            )
    return routes


WRITE_ROUTES = _write_routes()
WRONG_KEYS = [
    ("wrong", "Bearer not-the-key"),
    ("upper-cased key", f"Bearer {API_KEY.upper()}"),
    ("lower-cased key", f"Bearer {API_KEY.lower().replace('f', 'F')}"),
    ("key with a suffix", f"Bearer {API_KEY}x"),
    ("key with a prefix", f"Bearer x{API_KEY}"),
    ("key doubled", f"Bearer {API_KEY}{API_KEY}"),
    ("key with NUL padding", f"Bearer {API_KEY}\x00"),
    ("truncated key", f"Bearer {API_KEY[:-1]}"),
    ("empty-ish key", "Bearer x"),
    ("key in a second word", f"Bearer wrong {API_KEY}"),
]
NO_KEYS = [
    ("no header", None),
    ("empty header", ""),
    ("scheme only", "Bearer"),
    ("scheme and blanks", "Bearer    "),
    ("basic scheme", f"Basic {API_KEY}"),
    ("bare key", API_KEY),
    ("token scheme", f"Token {API_KEY}"),
    ("tab instead of space", f"Bearer\t{API_KEY}"),
]


def test_the_router_has_the_write_routes_the_design_names() -> None:
    listed = {f"{method} {path}" for method, path in WRITE_ROUTES}
    for expected in (
        "PUT /v2/repository/models/mlp",
        "POST /v2/repository/models/mlp/load",
        "POST /v2/repository/models/mlp/unload",
        "PUT /v2/models/mlp/state_dict",
        "DELETE /v2/models/mlp/versions/1",
        "PUT /v2/models/mlp/steering/joy",
        "DELETE /v2/models/mlp/steering/joy",
        "POST /v2/models/mlp/steering/joy/compute",
    ):
        assert expected in listed
    read_only = ("/infer", "/activations", "/generate", "completions")
    assert not any(path.endswith(read_only) for _, path in WRITE_ROUTES)


def _digest(root: Path) -> str:
    sha = hashlib.sha256()
    for folder, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder) / name
            sha.update(str(path.relative_to(root)).encode() + path.read_bytes())
    return sha.hexdigest()


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Path]]:
    """A keyed client on its own repository (the probes must leave it untouched)."""
    root = make_repository(tmp_path_factory.mktemp("auth") / "model_repository")
    client = start_client(root, api_key=API_KEY, repository_poll_ms=0)
    yield client, root
    client.__exit__(None, None, None)


def _send(client: TestClient, method: str, path: str, authorization: str | None, query: bytes = b"") -> int:
    headers = [] if authorization is None else [(b"authorization", authorization.encode("latin-1"))]
    return asgi_request(client, method, path, body=b"{}", headers=headers, query=query).status


@pytest.mark.parametrize(("method", "path"), WRITE_ROUTES)
def test_every_write_route_refuses_missing_and_non_bearer_keys_with_401(
    probed: tuple[TestClient, Path], method: str, path: str
) -> None:
    client, _ = probed
    for what, header in NO_KEYS:
        assert _send(client, method, path, header) == 401, what


@pytest.mark.parametrize(("method", "path"), WRITE_ROUTES)
def test_every_write_route_refuses_wrong_cased_and_padded_keys_with_403(
    probed: tuple[TestClient, Path], method: str, path: str
) -> None:
    client, _ = probed
    for what, header in WRONG_KEYS:
        assert _send(client, method, path, header) == 403, what


@pytest.mark.parametrize(("method", "path"), WRITE_ROUTES)
def test_keys_in_the_query_string_are_ignored(
    probed: tuple[TestClient, Path], method: str, path: str
) -> None:
    client, _ = probed
    for parameter in (b"api_key", b"key", b"token", b"access_token", b"authorization", b"apikey"):
        assert _send(client, method, path, None, query=parameter + b"=" + API_KEY.encode()) == 401
        assert _send(client, method, path, None, query=parameter + b"=Bearer%20" + API_KEY.encode()) == 401


def test_refused_writes_changed_nothing(probed: tuple[TestClient, Path]) -> None:
    client, root = probed
    before = _digest(root)
    for method, path in WRITE_ROUTES:
        for _, header in [*NO_KEYS, *WRONG_KEYS]:
            _send(client, method, path, header)
    assert _digest(root) == before
    assert client.get("/v2/models/mlp").json()["versions"] == ["1", "2"]
    assert client.post("/v2/models/mlp/infer", json=INFER_BODY).status_code == 200


def test_the_right_key_opens_the_write_routes_whatever_the_scheme_case(
    probed: tuple[TestClient, Path],
) -> None:
    client, _ = probed
    for header in (f"Bearer {API_KEY}", f"bearer {API_KEY}", f"BEARER {API_KEY}", f"Bearer  {API_KEY} "):
        assert _send(client, "POST", "/v2/repository/models/mlp-spare/load", header) == 200, header


def test_without_a_configured_key_every_write_route_is_closed(tmp_path: Path) -> None:
    client = start_client(make_repository(tmp_path / "model_repository"), repository_poll_ms=0)
    try:
        for method, path in WRITE_ROUTES:
            for header in (None, f"Bearer {API_KEY}", "Bearer "):
                assert _send(client, method, path, header) == 403, (method, path, header)
    finally:
        client.__exit__(None, None, None)


READ_KEY = "read-key-0b1c"


def _read_routes() -> list[tuple[str, str]]:
    app = create_app(Settings(model_repository=Path("unused"), seed_repository=False))
    routes = []
    for context in iter_route_contexts(app.routes):
        route = context.route
        if not isinstance(route, APIRoute) or route.path.startswith(("/v2/health/", "/ui", "/docs")):
            continue
        if route.path in ("/", "/openapi.json"):
            continue
        for method in sorted(route.methods - {"HEAD"}):
            if method == "GET" or READ_ONLY_POSTS.match(route.path):
                path = re.sub(r"\{(\w+)(:\w+)?\}", lambda m: PATH_VALUES[m.group(1)], route.path)
                routes.append((method, path))
    return routes


READ_ROUTES = _read_routes()


@pytest.fixture(scope="module")
def read_keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """A client whose server has both a read key and a write key."""
    root = make_repository(tmp_path_factory.mktemp("auth_read") / "model_repository")
    client = start_client(root, api_key=API_KEY, read_api_key=READ_KEY, repository_poll_ms=0)
    yield client
    client.__exit__(None, None, None)


def test_the_read_routes_include_inference_and_listings() -> None:
    listed = {f"{method} {path}" for method, path in READ_ROUTES}
    for expected in (
        "POST /v2/models/mlp/infer",
        "GET /v2/models/mlp/parameters",
        "GET /metrics",
        "POST /v2/models/mlp/generate_stream",
        "POST /v1/chat/completions",
        "GET /openai/v1/models",
    ):
        assert expected in listed


@pytest.mark.parametrize(("method", "path"), READ_ROUTES)
def test_with_a_read_key_every_read_route_needs_the_read_or_the_write_key(
    read_keyed: TestClient, method: str, path: str
) -> None:
    for what, header in NO_KEYS:
        assert _send(read_keyed, method, path, header) == 401, what
    for what, header in [*WRONG_KEYS, ("read key upper-cased", f"Bearer {READ_KEY.upper()}")]:
        assert _send(read_keyed, method, path, header) == 403, what
    for key in (READ_KEY, API_KEY):
        assert _send(read_keyed, method, path, f"Bearer {key}") not in (401, 403), key


def test_the_read_key_opens_no_write_route(read_keyed: TestClient) -> None:
    for method, path in WRITE_ROUTES:
        assert _send(read_keyed, method, path, f"Bearer {READ_KEY}") == 403, (method, path)
