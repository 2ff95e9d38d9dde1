"""Steering and per-token captures through every generation protocol, with stock clients.

The ``tiny`` model of ``_generation_models`` (float64) gets a steering vector at ``blocks.0.out``
(its first MLP's output) over ``PUT /v2/models/tiny/steering/push``; what steered greedy decoding
must give is computed in this process by the plain loop (the whole sequence through ``forward``)
with a forward hook adding the same vector, without the engine.
"""

from __future__ import annotations

import json
import queue
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest
from _app_support import WRITE_HEADERS
from _generation_models import TinyLMConfig, build
from _generation_support import GenerationServer
from _tiny_lm import ByteTokenizer, TinyGenerator
from safetensors.numpy import load as load_safetensors
from safetensors.numpy import save as save_safetensors

import mininn
from mininn.serialization import load

openai = pytest.importorskip("openai")
grpcclient = pytest.importorskip("tritonclient.grpc")

MODULE = "blocks.0.out"  # the first block's MLP output, called by prefill, decode and forward
VECTOR = np.random.default_rng(7).standard_normal(32).astype(np.float32)
SCALE = 4.0
PROMPT = "Hello"
TOKENS = 10
STEERING = [{"name": "push", "scale": SCALE}]


def steered_reference(repository: Any, prompt: str, steps: int, scale: float | None) -> str:
    """Greedy text by the plain loop, ``scale * VECTOR`` added to every position of MODULE."""
    folder = repository / "tiny"
    config = TinyLMConfig(**json.loads((folder / "model.json").read_text())["config"])
    module = build(config)
    module.load_state_dict(load(str(folder / "1" / "weights.safetensors")))
    module.to(dtype=mininn.float64).eval()
    generator = TinyGenerator(module, ByteTokenizer(), config.context)
    added = mininn.tensor((np.float32(scale or 0.0) * VECTOR).astype(np.float64))
    handle = module.blocks[0].out.register_forward_hook(lambda m, args, out: out + added if scale else None)
    try:
        tokenizer = ByteTokenizer()
        ids = list(tokenizer.encode(prompt))
        with mininn.no_grad():
            for _ in range(steps):
                ids.append(int(np.argmax(generator.module(mininn.tensor([ids])).numpy()[0, -1])))
        return tokenizer.decode(ids[len(tokenizer.encode(prompt)):])
    finally:
        handle.remove()


@pytest.fixture(scope="module")
def server(generation_server: GenerationServer) -> Iterator[GenerationServer]:
    url = f"{generation_server.base_url}/v2/models/tiny/steering/push"
    answer = httpx.put(url, content=save_safetensors({MODULE: VECTOR}), headers=WRITE_HEADERS, timeout=30)
    assert answer.status_code == 201, answer.text
    yield generation_server
    httpx.delete(url, headers=WRITE_HEADERS, timeout=30)


@pytest.fixture(scope="module")
def expected(server: GenerationServer) -> str:
    steered = steered_reference(server.repository, PROMPT, TOKENS, SCALE)
    assert steered != steered_reference(server.repository, PROMPT, TOKENS, None)
    return steered


@pytest.fixture(scope="module")
def client(server: GenerationServer) -> Iterator[Any]:
    with openai.OpenAI(base_url=f"{server.base_url}/v1", api_key="unused", max_retries=0) as made:
        yield made


def test_vectors_are_listed_downloaded_and_refused_without_the_write_key(server: GenerationServer) -> None:
    base = f"{server.base_url}/v2/models/tiny/steering"
    listing = httpx.get(base, timeout=30).json()
    assert {"name": "push", "modules": [MODULE], "width": [32]} in listing["vectors"]
    downloaded = load_safetensors(httpx.get(f"{base}/push", timeout=30).content)
    np.testing.assert_array_equal(downloaded[MODULE], VECTOR)
    refused = httpx.put(f"{base}/other", content=save_safetensors({MODULE: VECTOR}), timeout=30)
    assert refused.status_code == 401
    wrong = httpx.put(f"{base}/other", content=save_safetensors({MODULE: VECTOR[:7]}), headers=WRITE_HEADERS)
    assert wrong.status_code == 422 and "has 32 features per token" in wrong.json()["error"]
    assert httpx.get(f"{base}/other", timeout=30).status_code == 404
    assert (server.repository / "tiny" / "steering" / "push.safetensors").is_file()


def test_openai_extra_body_steers_completions_and_chat_streams_carry_captures(
    client: Any, expected: str
) -> None:
    completion = client.completions.create(
        model="tiny", prompt=PROMPT, max_tokens=TOKENS, temperature=0, extra_body={"steering": STEERING}
    )
    assert completion.choices[0].text == expected
    chunks = list(client.chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": "Hi"}], max_tokens=4, temperature=0, stream=True,
        extra_body={"steering": STEERING, "capture": {"modules": [MODULE]}},
    ))
    records = [c.model_extra["mininn"]["captures"][MODULE][0] for c in chunks if c.model_extra.get("mininn")]
    assert [r["step"] for r in records] == [0, 1, 2, 3]
    assert all(len(r["values"]) == 1 and len(r["values"][0]) == 32 for r in records)
    body = client.completions.create(
        model="tiny", prompt=PROMPT, max_tokens=3, temperature=0, extra_body={"capture": MODULE}
    )
    steps = body.model_extra["mininn"]["captures"][MODULE]
    assert [s["positions"] for s in steps] == [[5], [6], [7]]  # "<s>Hello" is 6 tokens


def test_openai_unknown_vector_is_a_400_naming_it(client: Any) -> None:
    with pytest.raises(openai.BadRequestError, match="has no steering vector 'nope'"):
        client.completions.create(
            model="tiny", prompt=PROMPT, max_tokens=2, extra_body={"steering": [{"name": "nope"}]}
        )


def test_triton_generate_parameters_steer(server: GenerationServer, expected: str) -> None:
    url = f"{server.base_url}/v2/models/tiny/generate"
    parameters = {"max_tokens": TOKENS, "temperature": 0, "steering": STEERING}
    body: dict[str, Any] = {"text_input": PROMPT, "parameters": parameters}
    answer = httpx.post(url, json=body, timeout=60)
    assert answer.status_code == 200, answer.text
    assert answer.json()["text_output"] == expected
    body["parameters"]["capture"] = {"modules": [MODULE], "reduce": "stats"}
    body["parameters"]["max_tokens"] = 2
    captures = httpx.post(url, json=body, timeout=60).json()["captures"]
    assert [entry["step"] for entry in captures[MODULE]] == [0, 1]
    assert set(captures[MODULE][0]["stats"]) >= {"mean", "std", "histogram"}
    body["parameters"]["steering"] = [{"name": "push", "steps": {"start": 0, "stop": 5}}]
    refused = httpx.post(url, json=body, timeout=60)
    assert refused.status_code == 422 and "reaches step 4" in refused.json()["error"]


def test_grpc_stream_infer_parameters_steer_and_captures_are_outputs(
    server: GenerationServer, expected: str
) -> None:
    client = grpcclient.InferenceServerClient(server.grpc_url)
    received: queue.Queue[tuple[Any, Any]] = queue.Queue()
    client.start_stream(callback=lambda result, error: received.put((result, error)))
    try:
        prompt = grpcclient.InferInput("text_input", [1], "BYTES")
        prompt.set_data_from_numpy(np.array([PROMPT.encode()], dtype=object))
        parameters = {"max_tokens": TOKENS, "temperature": 0.0, "steering": json.dumps(STEERING),
                      "capture": json.dumps({"modules": [MODULE]})}
        client.async_stream_infer("tiny", [prompt], request_id="s1", parameters=parameters)
        results = []
        while True:
            result, error = received.get(timeout=60)
            assert error is None, error
            results.append(result)
            if result.get_response().parameters["triton_final_response"].bool_param:
                break
    finally:
        client.stop_stream()
        client.close()
    tokens = [r for r in results if r.as_numpy("text_output") is not None]
    assert "".join(r.as_numpy("text_output")[0].decode() for r in tokens) == expected
    assert all(r.as_numpy(f"{MODULE}:output").shape == (1, 32) for r in tokens)


def test_v2_infer_steering_parameter_edits_the_one_forward(server: GenerationServer) -> None:
    ids = [256, *PROMPT.encode()]
    body = {
        "inputs": [{"name": "input_ids", "shape": [1, len(ids)], "datatype": "INT64", "data": ids}],
        "parameters": {"steering": json.dumps(STEERING)},
    }
    url = f"{server.base_url}/v2/models/tiny/infer"
    answer = httpx.post(url, json=body, timeout=60)
    assert answer.status_code == 200, answer.text
    logits = np.asarray(answer.json()["outputs"][0]["data"]).reshape(1, len(ids), -1)
    plain_answer = httpx.post(url, json={"inputs": body["inputs"]}, timeout=60).json()
    plain = np.asarray(plain_answer["outputs"][0]["data"])

    folder = server.repository / "tiny"
    config = TinyLMConfig(**json.loads((folder / "model.json").read_text())["config"])
    module = build(config)
    module.load_state_dict(load(str(folder / "1" / "weights.safetensors")))
    module.to(dtype=mininn.float64).eval()
    addend = mininn.tensor((np.float32(SCALE) * VECTOR).astype(np.float64))
    handle = module.blocks[0].out.register_forward_hook(lambda m, args, out: out + addend)
    try:
        with mininn.no_grad():
            expected = module(mininn.tensor([ids])).numpy()
    finally:
        handle.remove()
    np.testing.assert_allclose(logits, expected, rtol=1e-6, atol=1e-7)  # logits travel as FP32
    assert not np.allclose(plain.reshape(logits.shape), expected)
    body["parameters"] = {"steering": json.dumps([{"name": "push", "steps": "generated"}])}
    refused = httpx.post(url, json=body, timeout=60)
    assert refused.status_code == 422
    assert "steps and positions select generation steps" in refused.json()["error"]
