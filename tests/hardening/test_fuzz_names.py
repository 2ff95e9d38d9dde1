"""Fuzzing model names, versions and paths in every model route.

Names come from arbitrary text (slashes, dots, ``%2e%2e``, NUL, other
scripts, very long ones) and are percent-encoded into the path as a client
would send them, so the server decodes them the way uvicorn does. The write
routes are called with the key, so the fuzzing reaches the name checks behind
the key check.

The property: a 2xx or 4xx (503 only for a model that exists but does not
serve), never another 5xx; and whatever the name, nothing is written outside
the repository, and every folder the repository gains is a valid model name.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote, unquote

import pytest
from _hardening_support import API_KEY, asgi_request, examples
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.store.repository import MODEL_NAME_PATTERN

pytestmark = pytest.mark.timeout(300)

NAMES = (
    st.text(max_size=80)
    | st.sampled_from(
        [
            "..",
            ".",
            "mlp/..",
            "../mlp",
            "mlp/../../etc",
            "%2e%2e",
            "..%2f..",
            "mlp%00",
            "mlp\x00x",
            "a" * 64,
            "a" * 65,
            "-mlp",
            "_x",
            "mlp.",
            "mlp..json",
            "con",
            "model.json",
            "mlp/1",
            "ｍｌｐ",
            "mlp\n",
            " mlp",
            "mlp ",
            "\\..\\",
            "~root",
            "mlp;rm",
            "*",
        ]
    )
    | st.from_regex(MODEL_NAME_PATTERN, fullmatch=True)
)
VERSIONS = st.sampled_from(
    ["1", "2", "0", "-1", "01", "1.0", "99999999999999999999999", "x", "", "1/2", "%31"]
) | st.text(max_size=12)
ROUTES = [
    ("GET", "/v2/models/{m}"),
    ("GET", "/v2/models/{m}/ready"),
    ("GET", "/v2/models/{m}/config"),
    ("GET", "/v2/models/{m}/stats"),
    ("GET", "/v2/models/{m}/parameters"),
    ("GET", "/v2/models/{m}/modules"),
    ("GET", "/v2/models/{m}/state_dict"),
    ("GET", "/v2/models/{m}/versions/{v}"),
    ("GET", "/v2/models/{m}/versions/{v}/ready"),
    ("GET", "/v2/models/{m}/versions/{v}/state_dict"),
    ("POST", "/v2/models/{m}/infer"),
    ("POST", "/v2/models/{m}/versions/{v}/infer"),
    ("POST", "/v2/models/{m}/activations"),
    ("POST", "/v2/repository/models/{m}/load"),
    ("POST", "/v2/repository/models/{m}/unload"),
    ("PUT", "/v2/repository/models/{m}"),
    ("PUT", "/v2/repository/models/{m}/files/{v}"),
    ("PUT", "/v2/models/{m}/state_dict"),
    ("DELETE", "/v2/models/{m}/versions/{v}"),
]
SPEC = json.dumps(
    {"architecture": "mlp", "config": {"in_features": 4, "hidden_sizes": [8], "out_features": 3}}
)
INFER = json.dumps({"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]})


def _tree(root: Path) -> set[str]:
    return {
        os.path.relpath(os.path.join(folder, name), root)
        for folder, dirs, files in os.walk(root)
        for name in [*dirs, *files]
    }


@pytest.fixture(scope="module")
def outside(module_repository: Path) -> tuple[Path, set[str]]:
    """The folder around the repository and what it held before the fuzzing."""
    return module_repository.parent, _tree(module_repository.parent)


@settings(
    max_examples=examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(route=st.sampled_from(ROUTES), name=NAMES, version=VERSIONS, encode_slash=st.booleans())
def test_random_names_and_versions_get_a_2xx_or_a_4xx_and_write_nothing_outside(
    keyed_client: TestClient,
    module_repository: Path,
    outside: tuple[Path, set[str]],
    route: tuple[str, str],
    name: str,
    version: str,
    encode_slash: bool,
) -> None:
    method, template = route
    safe = "" if encode_slash else "/"
    raw = template.replace("{m}", quote(name, safe=safe)).replace("{v}", quote(version, safe=safe))
    body = {"PUT": SPEC.encode() if "repository" in template else b"junk", "POST": INFER.encode()}.get(
        method, b""
    )
    response = asgi_request(
        keyed_client,
        method,
        unquote(raw, errors="surrogateescape"),
        raw_path=raw.encode("ascii"),
        body=body,
        headers=[(b"authorization", f"Bearer {API_KEY}".encode())],
    )
    exists = MODEL_NAME_PATTERN.fullmatch(name) is not None and (module_repository / name).is_dir()
    assert response.status < 500 or (response.status == 503 and exists), (method, raw, response.body[:300])
    if response.status >= 400:
        assert isinstance(json.loads(response.body)["error"], str)
    root, before = outside
    added = _tree(root) - before
    inside = os.path.relpath(module_repository, root)
    assert all(path == inside or path.startswith(inside + os.sep) for path in added), added
    for folder in (module_repository).iterdir():
        assert MODEL_NAME_PATTERN.fullmatch(folder.name), folder


def test_a_name_that_climbs_out_of_the_repository_is_refused_with_400(keyed_client: TestClient) -> None:
    for raw in (
        "/v2/repository/models/..%2F..%2Fescape",
        "/v2/repository/models/..",
        "/v2/repository/models/%2e%2e",
    ):
        response = asgi_request(
            keyed_client,
            "PUT",
            unquote(raw),
            raw_path=raw.encode(),
            body=SPEC.encode(),
            headers=[(b"authorization", f"Bearer {API_KEY}".encode())],
        )
        assert response.status in (400, 404), (raw, response.status)
        if response.status == 400:
            assert "invalid model name" in json.loads(response.body)["error"]


def test_the_fuzzed_server_still_serves(keyed_client: TestClient) -> None:
    response = keyed_client.post("/v2/models/mlp/infer", content=INFER)
    assert response.status_code == 200
