from __future__ import annotations

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


def test_docs_page_is_served(client: TestClient) -> None:
    response = client.get("/docs")
    assert response.status_code == 200 and "swagger" in response.text.lower()
