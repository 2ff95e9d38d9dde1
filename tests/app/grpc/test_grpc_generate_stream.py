"""``ModelStreamInfer`` with the stock ``tritonclient.grpc`` streaming API against a real server.

A text model answers one response per generated token (output ``text_output``),
the last flagged ``triton_final_response``, as Triton's decoupled models do.
"""

from __future__ import annotations

import queue
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest
from _generation_support import GenerationServer, reference_ids, reference_text

grpcclient = pytest.importorskip("tritonclient.grpc")


class Stream:
    """A started ``tritonclient.grpc`` stream and what its callback received."""

    def __init__(self, url: str, **headers: str) -> None:
        self.client = grpcclient.InferenceServerClient(url)
        self.received: queue.Queue[tuple[Any, Any]] = queue.Queue()
        self.client.start_stream(
            callback=lambda result, error: self.received.put((result, error)), headers=headers
        )

    def send(self, model: str, inputs: list[Any], **options: Any) -> None:
        self.client.async_stream_infer(model, inputs, **options)

    def answers(self, requests: int) -> dict[str, list[Any]]:
        """Every response (or error) of ``requests`` requests, by request id, until each is final."""
        by_id: dict[str, list[Any]] = {}
        finished = 0
        while finished < requests:
            result, error = self.received.get(timeout=30)
            if error is not None:
                by_id.setdefault("errors", []).append(error)
                finished += 1
                continue
            response = result.get_response()
            by_id.setdefault(response.id, []).append(result)
            finished += response.parameters["triton_final_response"].bool_param
        return by_id

    def close(self) -> None:
        self.client.stop_stream()
        self.client.close()


@pytest.fixture
def stream(generation_server: GenerationServer) -> Iterator[Stream]:
    opened = Stream(generation_server.grpc_url)
    yield opened
    opened.close()


def text(value: str) -> Any:
    tensor = grpcclient.InferInput("text_input", [1], "BYTES")
    tensor.set_data_from_numpy(np.array([value.encode()], dtype=object))
    return tensor


def scalar(name: str, value: Any, datatype: str) -> Any:
    tensor = grpcclient.InferInput(name, [1], datatype)
    tensor.set_data_from_numpy(np.array([value], dtype={"INT32": np.int32, "FP32": np.float32}[datatype]))
    return tensor


def texts(results: list[Any]) -> str:
    return "".join(r.as_numpy("text_output")[0].decode() for r in results)


def test_a_text_model_streams_one_response_per_token_the_last_flagged_final(
    stream: Stream, generation_server: GenerationServer
) -> None:
    inputs = [text("Hello"), scalar("max_tokens", 8, "INT32"), scalar("temperature", 0.0, "FP32")]
    stream.send("tiny", inputs, request_id="a")
    (results,) = stream.answers(1).values()
    assert len(results) == 8
    assert texts(results) == reference_text(generation_server.repository, "tiny", "Hello", 8)
    finals = [r.get_response().parameters["triton_final_response"].bool_param for r in results]
    assert finals == [False] * 7 + [True]
    last = results[-1].get_response()
    assert (last.model_name, last.model_version, last.id) == ("tiny", "1", "a")
    assert last.parameters["finish_reason"].string_param == "length"
    assert last.parameters["num_output_tokens"].int64_param == 8
    assert last.parameters["num_input_tokens"].int64_param == 6
    assert results[0].as_numpy("text_output").shape == (1,)


def test_requests_on_one_stream_are_answered_concurrently(
    stream: Stream, generation_server: GenerationServer
) -> None:
    prompts = {"p1": "Hello", "p2": "Once upon", "p3": "x"}
    for request_id, prompt in prompts.items():
        stream.send(
            "tiny", [text(prompt)], request_id=request_id, parameters={"max_tokens": 6, "temperature": 0}
        )
    answers = stream.answers(3)
    for request_id, prompt in prompts.items():
        assert texts(answers[request_id]) == reference_text(generation_server.repository, "tiny", prompt, 6)


def test_an_empty_final_response_when_the_client_asks_for_it(stream: Stream) -> None:
    stream.send(
        "tiny", [text("Hi")], request_id="e", parameters={"max_tokens": 3}, enable_empty_final_response=True
    )
    (results,) = stream.answers(1).values()
    assert len(results) == 4 and results[-1].get_response().outputs == []
    assert [r.get_response().parameters["triton_final_response"].bool_param for r in results] == [
        False,
        False,
        False,
        True,
    ]


def test_the_stream_matches_http_generate_and_takes_sampling_parameters(
    stream: Stream, generation_server: GenerationServer
) -> None:
    sampling = {"max_tokens": 10, "temperature": 1.3, "top_k": 40, "seed": 11}
    http = httpx.post(
        f"{generation_server.base_url}/v2/models/tiny/generate",
        json={"text_input": "Hello", "parameters": sampling},
        timeout=30,
    ).json()["text_output"]
    stream.send("tiny", [text("Hello")], parameters=sampling)
    (results,) = stream.answers(1).values()
    assert texts(results) == http


def test_input_ids_stream_output_ids(stream: Stream, generation_server: GenerationServer) -> None:
    ids = grpcclient.InferInput("input_ids", [2], "INT64")
    ids.set_data_from_numpy(np.array([72, 105], dtype=np.int64))
    stream.send("tiny-ids", [ids], parameters={"max_tokens": 4, "temperature": 0})
    (results,) = stream.answers(1).values()
    got = [int(r.as_numpy("output_ids")[0]) for r in results]
    assert got == reference_ids(generation_server.repository, "tiny-ids", [72, 105], 4)


def test_another_model_answers_once_flagged_final(stream: Stream) -> None:
    tensor = grpcclient.InferInput("input", [1, 4], "FP32")
    tensor.set_data_from_numpy(np.zeros((1, 4), dtype=np.float32))
    stream.send("mlp", [tensor], request_id="m")
    (results,) = stream.answers(1).values()
    assert len(results) == 1 and results[0].as_numpy("output").shape == (1, 3)


def test_errors_answer_their_request_and_the_stream_goes_on(stream: Stream) -> None:
    stream.send("nope", [text("Hi")], request_id="1")
    stream.send("tiny", [text("Hi")], request_id="2", parameters={"max_tokenz": 3})
    stream.send("tiny", [text("x" * 80)], request_id="3")
    stream.send("faulty", [text("Hi")], request_id="4", parameters={"max_tokens": 30, "temperature": 0})
    stream.send("tiny", [text("Hi")], request_id="5", parameters={"max_tokens": 2})
    answers = stream.answers(5)
    messages = sorted(str(e) for e in answers.pop("errors"))
    assert len(messages) == 4
    assert any("Request for unknown model: 'nope' is not found" in m for m in messages)
    assert any("unknown parameter 'max_tokenz' for generate" in m for m in messages)
    assert any("the prompt has 81 tokens" in m for m in messages)
    assert any("model 'faulty' failed while generating (after 9 tokens)" in m for m in messages)
    assert len(answers["4"]) == 9  # the tokens before the failure came through
    assert len(answers["5"]) == 2
