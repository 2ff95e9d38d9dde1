from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from app.http.auth import WRITES_DISABLED

BODY = {"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_without_keys_reads_are_open_and_writes_are_closed(client: TestClient) -> None:
    refused = client.post("/v2/repository/models/mlp-spare/unload")
    assert (refused.status_code, refused.json()) == (403, {"error": WRITES_DISABLED})
    assert client.post("/v2/models/mlp/infer", json=BODY).status_code == 200


def test_write_endpoints_need_the_write_key(client_factory: Any) -> None:
    client = client_factory(api_key="write-key")
    missing = client.post("/v2/repository/models/mlp-spare/unload")
    assert (missing.status_code, missing.json()) == (
        401,
        {"error": "this write endpoint needs 'Authorization: Bearer <key>' (MININN_API_KEY is set)"},
    )
    assert missing.headers["www-authenticate"] == "Bearer"
    wrong = client.post("/v2/repository/models/mlp-spare/load", headers=bearer("nope"))
    assert (wrong.status_code, wrong.json()) == (
        403,
        {"error": "the bearer key is not valid for this write endpoint"},
    )
    assert (
        client.post("/v2/repository/models/mlp-spare/load", headers={"Authorization": "Basic x"}).status_code
        == 401
    )
    assert (
        client.post("/v2/repository/models/mlp-spare/unload", headers=bearer("write-key")).status_code == 200
    )
    # reads stay open when only a write key is set
    assert client.post("/v2/models/mlp/infer", json=BODY).status_code == 200


def test_a_refused_write_changes_nothing(client_factory: Any) -> None:
    client = client_factory(api_key="write-key")
    assert client.post("/v2/repository/models/mlp/unload", headers=bearer("nope")).status_code == 403
    assert client.get("/v2/models/mlp/ready").status_code == 200


def test_read_endpoints_need_the_read_or_write_key(client_factory: Any) -> None:
    client = client_factory(api_key="write-key", read_api_key="read-key")
    for method, path, kwargs in [
        ("GET", "/v2", {}),
        ("GET", "/v2/models/mlp", {}),
        ("POST", "/v2/models/mlp/infer", {"json": BODY}),
        ("POST", "/v2/repository/index", {}),
        ("GET", "/v2/models/mlp/parameters", {}),
        ("GET", "/metrics", {}),
    ]:
        refused = client.request(method, path, **kwargs)
        assert refused.status_code == 401, path
        assert refused.json() == {
            "error": "this read endpoint needs 'Authorization: Bearer <key>' (MININN_READ_API_KEY is set)"
        }
        assert client.request(method, path, headers=bearer("read-key"), **kwargs).status_code == 200, path
        assert client.request(method, path, headers=bearer("write-key"), **kwargs).status_code == 200, path
        assert client.request(method, path, headers=bearer("other"), **kwargs).status_code == 403, path
    # the read key does not open writes; health probes need no key
    assert client.post("/v2/repository/models/mlp/unload", headers=bearer("read-key")).status_code == 403
    assert client.get("/v2/health/live").status_code == 200
    assert client.get("/v2/health/ready").status_code == 200
