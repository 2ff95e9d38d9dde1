"""Triton's generate extension with httpx against a real server of text-generation models.

``generate`` answers the text whole, ``generate_stream`` as server-sent events
(``data: <json>`` frames, no ``[DONE]``), both on ``/v2/models/{m}`` and
``/v2/models/{m}/versions/{v}``; greedy text is the reference loop's.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from _generation_support import GenerationServer, reference_ids, reference_text


def post(server: GenerationServer, path: str, body: Any) -> httpx.Response:
    return httpx.post(f"{server.base_url}{path}", json=body, timeout=30)


def frames(response: httpx.Response) -> list[dict[str, Any]]:
    """The stream's events, each ``data: <json>`` followed by a blank line."""
    text = response.text
    assert text.endswith("\n\n")
    events = text.split("\n\n")[:-1]
    assert all(event.startswith("data: ") and "\n" not in event for event in events), events
    return [json.loads(event.removeprefix("data: ")) for event in events]


@pytest.mark.parametrize("path", ["/v2/models/tiny/generate", "/v2/models/tiny/versions/1/generate"])
def test_generate_answers_the_generated_text_only(generation_server: GenerationServer, path: str) -> None:
    body = {"text_input": "Hello", "parameters": {"max_tokens": 10, "temperature": 0}}
    response = post(generation_server, path, body)
    assert response.status_code == 200, response.text
    assert response.json() == {
        "model_name": "tiny",
        "model_version": "1",
        "text_output": reference_text(generation_server.repository, "tiny", "Hello", 10),
        "finish_reason": "length",
        "num_input_tokens": 6,
        "num_output_tokens": 10,
    }


def test_sampling_values_may_be_fields_parameters_or_sampling_parameters(
    generation_server: GenerationServer,
) -> None:
    expected = reference_text(generation_server.repository, "tiny", "Hello", 5)
    bodies = [
        {"text_input": "Hello", "max_tokens": 5, "temperature": 0},  # TensorRT-LLM's top-level inputs
        {"text_input": "Hello", "parameters": {"max_tokens": 5, "temperature": 0.0}},
        {"text_input": "Hello", "sampling_parameters": json.dumps({"max_tokens": 5, "temperature": 0})},
        {"text_input": "Hello", "stream": False, "parameters": {"max_tokens": 5, "temperature": 0}},
    ]
    for body in bodies:
        assert post(generation_server, "/v2/models/tiny/generate", body).json()["text_output"] == expected


def test_exclude_input_in_output_false_puts_the_prompt_in_front(generation_server: GenerationServer) -> None:
    body = {
        "text_input": "Hello",
        "exclude_input_in_output": False,
        "parameters": {"max_tokens": 4, "temperature": 0},
    }
    answer = post(generation_server, "/v2/models/tiny/generate", body).json()
    assert answer["text_output"] == "Hello" + reference_text(generation_server.repository, "tiny", "Hello", 4)
    streamed = frames(post(generation_server, "/v2/models/tiny/generate_stream", body))
    assert "".join(f["text_output"] for f in streamed) == answer["text_output"]


def test_a_request_id_is_echoed(generation_server: GenerationServer) -> None:
    body = {"id": "r-42", "text_input": "Hi", "parameters": {"max_tokens": 2}}
    assert post(generation_server, "/v2/models/tiny/generate", body).json()["id"] == "r-42"


def test_input_ids_serve_a_model_without_a_tokenizer(generation_server: GenerationServer) -> None:
    body = {"input_ids": [72, 105], "parameters": {"max_tokens": 5, "temperature": 0}}
    answer = post(generation_server, "/v2/models/tiny-ids/generate", body).json()
    assert answer["output_ids"] == reference_ids(generation_server.repository, "tiny-ids", [72, 105], 5)
    assert answer["text_output"] == ""
    refused = post(generation_server, "/v2/models/tiny-ids/generate", {"text_input": "Hi"})
    assert refused.status_code == 422 and "has no tokenizer" in refused.json()["error"]


def test_generate_stream_sends_a_frame_per_token_and_a_last_with_the_finish_reason(
    generation_server: GenerationServer,
) -> None:
    body = {"text_input": "Hello", "parameters": {"max_tokens": 8, "temperature": 0}}
    response = post(generation_server, "/v2/models/tiny/versions/1/generate_stream", body)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    *tokens, last = frames(response)
    assert "[DONE]" not in response.text
    assert all(set(f) == {"model_name", "model_version", "text_output"} for f in tokens)
    assert "".join(f["text_output"] for f in tokens) == reference_text(
        generation_server.repository, "tiny", "Hello", 8
    )
    assert last == {
        "model_name": "tiny",
        "model_version": "1",
        "text_output": "",
        "finish_reason": "length",
        "num_input_tokens": 6,
        "num_output_tokens": 8,
    }


# ---- bad input: V2 errors before the stream, an error event after it starts -------------------


@pytest.mark.parametrize("route", ["generate", "generate_stream"])
def test_errors_before_a_stream_starts_are_ordinary_v2_errors(
    generation_server: GenerationServer, route: str
) -> None:
    cases = [
        ("nope", {"text_input": "Hi"}, 404, "Request for unknown model: 'nope' is not found"),
        ("mlp", {"text_input": "Hi"}, 422, "model 'mlp' is not a text-generation model"),
        (
            "tiny",
            {"text_input": "Hi", "parameters": {"max_tokenz": 3}},
            400,
            "unknown parameter 'max_tokenz'",
        ),
        ("tiny", {"text_input": "Hi", "top_kk": 3}, 400, "unknown field 'top_kk' for generate"),
        ("tiny", {"text_input": "x" * 80}, 422, "the prompt has 81 tokens"),
        (
            "tiny",
            {"text_input": "Hi", "parameters": {"max_tokens": 100}},
            422,
            "lower max_tokens to at most 61",
        ),
        (
            "tiny",
            {"text_input": "Hi", "parameters": {"temperature": "hot"}},
            400,
            "'temperature' must be a number",
        ),
        ("tiny", {"parameters": {"max_tokens": 3}}, 422, "needs 'text_input'"),
        (
            "tiny",
            {"text_input": "Hi", "max_tokens": 2, "parameters": {"max_tokens": 3}},
            400,
            "more than once",
        ),
    ]
    for model, body, status, message in cases:
        response = post(generation_server, f"/v2/models/{model}/{route}", body)
        assert response.status_code == status, (body, response.text)
        assert response.headers["content-type"] == "application/json"
        assert message in response.json()["error"], (body, response.json())


def test_a_model_failing_mid_stream_ends_it_with_an_error_event_and_the_server_goes_on(
    generation_server: GenerationServer,
) -> None:
    body = {"text_input": "Hi", "parameters": {"max_tokens": 30, "temperature": 0}}
    response = post(generation_server, "/v2/models/faulty/generate_stream", body)
    assert response.status_code == 200
    *tokens, error = frames(response)
    assert len(tokens) == 9 and all("text_output" in f for f in tokens)
    assert error == {
        "error": "model 'faulty' failed while generating (after 9 tokens): RuntimeError: the tiny model "
        "failed on purpose"
    }
    whole = post(generation_server, "/v2/models/faulty/generate", body)
    assert whole.status_code == 500 and "failed while generating" in whole.json()["error"]
    assert post(generation_server, "/v2/models/tiny/generate", {"text_input": "Hi"}).status_code == 200
