"""Triton's generate request translated: fields, parameters, gRPC inputs, and the names refused."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from app.errors import BadRequestError, UnprocessableError
from app.runtime.generation import GenerationResult, SamplingParams, TokenEvent
from app.v2.generate import final_fields, parse_generate, token_fields


def parse(fields: dict[str, Any], parameters: dict[str, Any] | None = None) -> Any:
    return parse_generate(fields, parameters or {}, model="m")


def test_sampling_values_come_from_fields_parameters_or_sampling_parameters() -> None:
    expected = SamplingParams(max_tokens=5, temperature=0.5, top_k=3, stop=("\n",), seed=1)
    as_fields = parse(
        {"text_input": "Hi", "max_tokens": 5, "temperature": 0.5, "top_k": 3, "stop": "\n", "seed": 1}
    )
    as_parameters = parse(
        {"text_input": "Hi"}, {"max_tokens": 5, "temperature": 0.5, "top_k": 3, "stop": ["\n"], "seed": 1}
    )
    vllm = parse(
        {"text_input": "Hi", "sampling_parameters": json.dumps({"max_tokens": 5, "temperature": 0.5})},
        {"top_k": 3, "stop": "\n", "seed": 1},
    )
    for parsed in (as_fields, as_parameters, vllm):
        assert parsed.sampling == expected and parsed.text_input == "Hi" and parsed.input_ids is None


def test_the_output_leaves_the_input_out_unless_asked() -> None:
    assert parse({"text_input": "Hi"}).exclude_input
    assert not parse({"text_input": "Hi", "exclude_input_in_output": False}).exclude_input
    with pytest.raises(BadRequestError, match="'exclude_input_in_output' must be true or false"):
        parse({"text_input": "Hi", "exclude_input_in_output": "no"})


def test_grpc_inputs_arrive_as_arrays() -> None:
    parsed = parse(
        {
            "text_input": np.array([b"Hi"], dtype=object),
            "max_tokens": np.array([[7]], dtype=np.int32),
            "temperature": np.array([0.0], dtype=np.float32),
            "stop": np.array([b"a", b"b"], dtype=object),
            "stop_token_ids": np.array([3], dtype=np.int64),
        }
    )
    assert parsed.text_input == "Hi"
    assert parsed.sampling == SamplingParams(
        max_tokens=7, temperature=0.0, stop=("a", "b"), stop_token_ids=(3,)
    )
    ids = parse({"input_ids": np.array([1, 2, 3], dtype=np.int64)})
    assert ids.input_ids == (1, 2, 3) and ids.text_input is None
    with pytest.raises(BadRequestError, match="input 'max_tokens' must hold one element, got 2"):
        parse({"text_input": "Hi", "max_tokens": np.array([1, 2])})


def test_the_timeout_parameter_is_microseconds_as_for_infer() -> None:
    assert parse({"text_input": "Hi"}, {"timeout": 2_500_000}).timeout_s == 2.5
    assert parse({"text_input": "Hi"}).timeout_s is None
    with pytest.raises(BadRequestError, match="'timeout' must be a positive integer"):
        parse({"text_input": "Hi"}, {"timeout": -1})


def test_unknown_names_are_refused_listing_the_accepted_ones() -> None:
    with pytest.raises(BadRequestError) as raised:
        parse({"text_input": "Hi"}, {"max_tokenz": 3})
    assert raised.value.message.startswith(
        "unknown parameter 'max_tokenz' for generate; the accepted names are "
    )
    assert "max_tokens" in raised.value.message
    with pytest.raises(BadRequestError, match="unknown field 'bad_words' for generate"):
        parse({"text_input": "Hi", "bad_words": ""})
    with pytest.raises(BadRequestError, match="unknown sampling_parameters key 'best_of'"):
        parse({"text_input": "Hi", "sampling_parameters": {"best_of": 2}})
    with pytest.raises(BadRequestError, match="'logprobs' for generate"):
        parse({"text_input": "Hi"}, {"logprobs": 1})


def test_a_name_given_twice_is_refused() -> None:
    with pytest.raises(BadRequestError, match="'max_tokens' is given more than once"):
        parse({"text_input": "Hi", "max_tokens": 1}, {"max_tokens": 2})


def test_exactly_one_prompt_form() -> None:
    for fields in ({}, {"text_input": "Hi", "input_ids": [1]}):
        with pytest.raises(UnprocessableError, match="send exactly one of them"):
            parse(fields)
    with pytest.raises(BadRequestError, match="'text_input' must be a string"):
        parse({"text_input": ["Hi"]})
    with pytest.raises(BadRequestError, match="'input_ids' must be a list of token ids"):
        parse({"input_ids": [1, "2"]})


def test_bad_sampling_values_are_the_sampling_params_own_errors() -> None:
    with pytest.raises(BadRequestError, match="'stop' must be a non-empty string or a list of them"):
        parse({"text_input": "Hi", "stop": [""]})
    with pytest.raises(BadRequestError, match="sampling parameter 'temperature' must be a number"):
        parse({"text_input": "Hi", "temperature": "hot"})


def test_sampling_parameters_must_be_a_json_object() -> None:
    with pytest.raises(BadRequestError, match="sampling_parameters is not valid JSON"):
        parse({"text_input": "Hi", "sampling_parameters": "{"})
    with pytest.raises(BadRequestError, match="must be a JSON object"):
        parse({"text_input": "Hi", "sampling_parameters": "[1]"})


def test_response_fields() -> None:
    event = TokenEvent(7, "a")
    assert token_fields(event, with_ids=False) == {"text_output": "a"}
    assert token_fields(event, with_ids=True) == {"text_output": "a", "output_ids": [7]}
    result = GenerationResult("stop", prompt_tokens=3, completion_tokens=2, text="ab", token_ids=(1, 2))
    assert final_fields(result) == {"finish_reason": "stop", "num_input_tokens": 3, "num_output_tokens": 2}
