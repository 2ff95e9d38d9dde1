"""OpenAI's error body on the OpenAI paths, the V2 body everywhere else, from the app's one handler."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.openai.errors import openai_error, openai_error_frame


@pytest.mark.parametrize(
    ("status", "message", "kind", "code"),
    [
        (400, "bad", "invalid_request_error", None),
        (401, "no key", "authentication_error", "invalid_api_key"),
        (403, "wrong key", "permission_error", None),
        (404, "The model 'x' does not exist", "invalid_request_error", "model_not_found"),
        (404, "no route for GET /v1/x", "invalid_request_error", None),
        (413, "too big", "invalid_request_error", "request_too_large"),
        (
            422,
            "the prompt has 81 tokens, and model 'tiny' has a context length of 64 tokens",
            "invalid_request_error",
            "context_length_exceeded",
        ),
        (429, "slow down", "rate_limit_error", "rate_limit_exceeded"),
        (500, "boom", "server_error", None),
        (503, "full", "server_error", "service_unavailable"),
    ],
)
def test_each_status_has_openais_type_and_code(
    status: int, message: str, kind: str, code: str | None
) -> None:
    assert openai_error(status, message, param="p") == {
        "message": message,
        "type": kind,
        "param": "p",
        "code": code,
    }


def test_an_error_frame_is_one_server_sent_event() -> None:
    assert openai_error_frame(500, "model failed") == (
        b'data: {"error":{"message":"model failed","type":"server_error","param":null,"code":null}}\n\n'
    )


def test_openai_paths_answer_openais_body_and_others_v2s(client: TestClient) -> None:
    for path in ("/v1/embeddings", "/openai/v1/embeddings"):
        response = client.get(path)
        assert response.status_code == 404
        assert response.json() == {
            "error": {
                "message": f"no route for GET {path}; see /docs for the API",
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
        }
    wrong_method = client.get("/v1/completions")
    assert wrong_method.status_code == 405 and wrong_method.json()["error"]["message"].startswith(
        "method GET is not allowed on /v1/completions"
    )
    assert client.get("/v2/nothing").json() == {
        "error": "no route for GET /v2/nothing; see /docs for the API"
    }
    assert client.get("/v1x").json() == {"error": "no route for GET /v1x; see /docs for the API"}


def test_bodies_that_are_not_json_objects_are_bad_requests(client: TestClient) -> None:
    for body in (b"{", b"[1]", b""):
        response = client.post("/v1/completions", content=body)
        assert response.status_code == 400, body
        assert response.json()["error"]["type"] == "invalid_request_error"
    deep = b"[" * 100 + b"]" * 100
    assert (
        "more than 64 levels deep"
        in client.post("/v1/chat/completions", content=deep).json()["error"]["message"]
    )


def test_a_body_over_the_limit_is_a_413_in_openais_shape(client_factory) -> None:  # type: ignore[no-untyped-def]
    small = client_factory(max_request_bytes=1024)
    response = small.post("/v1/completions", json={"model": "m", "prompt": "x" * 2000})
    assert response.status_code == 413 and response.json()["error"]["code"] == "request_too_large"


def test_the_model_list_is_empty_without_text_models(client: TestClient) -> None:
    assert client.get("/v1/models").json() == {"object": "list", "data": []}
    response = client.get("/v1/models/mlp")
    assert response.status_code == 404 and response.json()["error"]["param"] == "model"
    assert response.json()["error"]["message"] == (
        "The model 'mlp' does not generate text (it serves /v2/models/mlp/infer); the models that generate "
        "text here are: none (GET /v1/models lists them)"
    )


def test_the_openapi_document_describes_the_generation_routes(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for prefix in ("/v1", "/openai/v1"):
        chat = paths[f"{prefix}/chat/completions"]["post"]
        schema = chat["requestBody"]["content"]["application/json"]["schema"]
        assert {"model", "messages", "top_k", "stream_options"} <= set(schema["properties"])
        assert "text/event-stream" in chat["responses"]["200"]["content"]
        assert chat["responses"]["404"]["content"]["application/json"]["schema"]["$ref"].endswith(
            "OpenAIErrorBody"
        )
        assert f"{prefix}/models/{{model_name}}" in paths
    generate = paths["/v2/models/{model_name}/versions/{model_version}/generate_stream"]["post"]
    assert generate["requestBody"]["content"]["application/json"]["example"]["text_input"]
