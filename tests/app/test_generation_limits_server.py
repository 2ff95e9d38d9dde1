"""Keys, backpressure and disconnects on the generation protocols, against a real server.

The server has a read key (``reader``) and room for one running sequence per
model and none waiting, so a second request on a busy model is refused at
once (503, ``Retry-After``) until the first one's place is free. ``slow``
takes 20 ms a token: a generation of 400 tokens holds its place for 8 s
unless the client that asked for it goes away and cancels it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest
from _app_support import wait_until
from _generation_support import GenerationServer, start_generation_server

pytestmark = pytest.mark.slow  # a server of its own, and waits that must run out

openai = pytest.importorskip("openai")
grpcclient = pytest.importorskip("tritonclient.grpc")
from tritonclient.utils import InferenceServerException  # noqa: E402

READ = {"Authorization": "Bearer reader"}
LONG = {"model": "slow", "prompt": "Hi", "max_tokens": 400, "temperature": 0}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GenerationServer]:
    yield from start_generation_server(
        tmp_path_factory.mktemp("limits"),
        MININN_READ_API_KEY="reader",
        MININN_MAX_SEQUENCES="1",
        MININN_MAX_WAITING_SEQUENCES="0",
    )


def openai_client(server: GenerationServer, key: str = "reader") -> Any:
    return openai.OpenAI(base_url=f"{server.base_url}/v1", api_key=key, max_retries=0)


def free_again(server: GenerationServer, within: float) -> float:
    """Seconds until ``slow`` takes a request again (its only place is free)."""

    def served() -> bool:
        body = {**LONG, "max_tokens": 1}
        response = httpx.post(f"{server.base_url}/v1/completions", json=body, headers=READ, timeout=10)
        return response.status_code == 200

    return wait_until(served, within, "slow's place to be free")


def test_openai_routes_need_the_read_key_and_answer_in_openais_shape(server: GenerationServer) -> None:
    with openai_client(server, key="wrong") as wrong, pytest.raises(openai.PermissionDeniedError) as raised:
        wrong.models.list()
    assert raised.value.body == {
        "message": "the bearer key is not valid for this read endpoint",
        "type": "permission_error",
        "param": None,
        "code": None,
    }
    response = httpx.post(f"{server.base_url}/openai/v1/chat/completions", json={})
    assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
    assert response.json()["error"]["type"] == "authentication_error"
    assert response.json()["error"]["code"] == "invalid_api_key"
    with openai_client(server) as client:
        assert client.completions.create(model="tiny", prompt="Hi", max_tokens=2).usage.completion_tokens == 2


def test_triton_generate_needs_the_read_key_and_answers_v2_errors(server: GenerationServer) -> None:
    url = f"{server.base_url}/v2/models/tiny/generate_stream"
    refused = httpx.post(url, json={"text_input": "Hi"})
    assert refused.status_code == 401 and set(refused.json()) == {"error"}
    assert httpx.post(url, json={"text_input": "Hi"}, headers=READ).status_code == 200


def test_a_full_engine_is_a_503_with_retry_after_in_each_protocols_shape(server: GenerationServer) -> None:
    with httpx.stream(
        "POST", f"{server.base_url}/v1/completions", json={**LONG, "stream": True}, headers=READ, timeout=30
    ) as running:
        assert running.status_code == 200
        lines = running.iter_lines()  # kept: a dropped iterator closes the connection
        next(lines)  # generating: slow's one place is taken
        with openai_client(server) as client, pytest.raises(openai.InternalServerError) as raised:
            client.completions.create(model="slow", prompt="Hi", max_tokens=2)
        assert raised.value.status_code == 503 and raised.value.response.headers["retry-after"]
        assert raised.value.body["code"] == "service_unavailable"
        triton = httpx.post(
            f"{server.base_url}/v2/models/slow/generate", json={"text_input": "Hi"}, headers=READ, timeout=10
        )
        assert triton.status_code == 503 and "retry-after" in triton.headers
        assert set(triton.json()) == {"error"}
    free_again(server, within=6)


def test_closing_an_openai_stream_cancels_its_generation(server: GenerationServer) -> None:
    started = time.monotonic()
    with httpx.stream(
        "POST",
        f"{server.base_url}/v1/chat/completions",
        json={
            "model": "slow",
            "messages": [{"role": "user", "content": "Hi"}],
            "max_tokens": 400,
            "stream": True,
        },
        headers=READ,
        timeout=30,
    ) as running:
        lines = running.iter_lines()
        assert next(lines).startswith("data: ")
    free_again(server, within=6)
    assert time.monotonic() - started < 7.5  # the 400 tokens take 8 s at least (20 ms a step)


def test_a_client_that_gives_up_on_a_whole_answer_cancels_it(server: GenerationServer) -> None:
    for path, body in [
        ("/v1/completions", LONG),
        ("/v2/models/slow/generate", {"text_input": "Hi", "parameters": {"max_tokens": 400}}),
    ]:
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(
                f"{server.base_url}{path}", json=body, headers=READ, timeout=httpx.Timeout(10, read=0.5)
            )
        free_again(server, within=6)
        assert time.monotonic() - started < 7.5, path


def test_closing_a_grpc_stream_cancels_its_generations(server: GenerationServer) -> None:
    received: list[Any] = []
    client = grpcclient.InferenceServerClient(server.grpc_url)
    client.start_stream(
        callback=lambda result, error: received.append((result, error)),
        headers={"authorization": "Bearer reader"},
    )
    prompt = grpcclient.InferInput("text_input", [1], "BYTES")
    prompt.set_data_from_numpy(np.array([b"Hi"], dtype=object))
    started = time.monotonic()
    client.async_stream_infer("slow", [prompt], parameters={"max_tokens": 400})
    wait_until(lambda: len(received) >= 2, 10, "the first tokens")
    assert all(error is None for _, error in received)
    client.stop_stream(cancel_requests=True)
    client.close()
    free_again(server, within=6)
    assert time.monotonic() - started < 7.5


def test_a_wrong_key_ends_a_grpc_stream(server: GenerationServer) -> None:
    received: list[Any] = []
    client = grpcclient.InferenceServerClient(server.grpc_url)
    client.start_stream(
        callback=lambda result, error: received.append((result, error)),
        headers={"authorization": "Bearer wrong"},
    )
    prompt = grpcclient.InferInput("text_input", [1], "BYTES")
    prompt.set_data_from_numpy(np.array([b"Hi"], dtype=object))
    with contextlib.suppress(InferenceServerException):  # the stream may be refused before this is sent
        client.async_stream_infer("tiny", [prompt])
    wait_until(lambda: bool(received), 10, "the refusal")
    client.stop_stream()
    client.close()
    (result, error), *_ = received
    assert result is None and "the bearer key is not valid for this read endpoint" in str(error)
