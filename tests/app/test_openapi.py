from __future__ import annotations

import re

from fastapi.testclient import TestClient


def test_openapi_documents_every_route_with_examples(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    assert schema["info"]["title"] == "mininn-serve"
    paths = schema["paths"]
    for path in (
        "/v2",
        "/v2/health/ready",
        "/v2/models/{model_name}",
        "/v2/models/{model_name}/versions/{model_version}/infer",
        "/v2/repository/index",
        "/v2/repository/models/{model_name}/load",
        "/v2/models/{model_name}/parameters",
        "/v2/models/{model_name}/modules",
        "/metrics",
    ):
        assert path in paths, path
    infer = paths["/v2/models/{model_name}/infer"]["post"]
    assert infer["requestBody"]["content"]["application/json"]["example"]["inputs"][0]["name"] == "input"
    assert "example" in infer["responses"]["200"]["content"]["application/json"]
    assert {"400", "404", "413", "422", "503"} <= set(infer["responses"])
    parameters = paths["/v2/models/{model_name}/parameters"]["get"]["parameters"]
    assert {p["name"] for p in parameters} == {"model_name", "stats", "bins"}


def test_docs_page_is_served_with_assets_of_this_server_only(client: TestClient) -> None:
    response = client.get("/docs")
    assert response.status_code == 200 and "swagger" in response.text.lower()
    loaded = re.findall(r'(?:src|href|url)\s*[=:]\s*["\']([^"\']+)', response.text)
    assert loaded and all(url.startswith("/") for url in loaded), loaded  # no CDN, no other origin
    assets = {"/docs/assets/swagger-ui-bundle.js", "/docs/assets/swagger-ui.css"}
    assert {"/openapi.json", *assets} <= set(loaded)
    for url in loaded:
        if url.startswith("/docs/assets/"):
            asset = client.get(url)
            assert asset.status_code == 200 and len(asset.content) > 500, url
    script = client.get("/docs/assets/swagger-ui-bundle.js")
    assert script.headers["content-type"].startswith("text/javascript")
    assert b"SwaggerUIBundle" in script.content


def test_docs_assets_outside_the_page_s_list_and_redoc_are_not_served(client: TestClient) -> None:
    assert client.get("/docs/assets/index.html").status_code == 404
    assert "swagger-ui.css" in client.get("/docs/assets/__init__.py").json()["error"]
    assert client.get("/docs/assets/..%2F__init__.py").status_code == 404
    assert client.get("/redoc").status_code == 404  # ReDoc would load its script from a CDN
