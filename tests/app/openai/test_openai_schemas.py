"""OpenAI's request bodies: OpenAI's defaults, vLLM's extras, and refusals that name the field."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from app.openai.schemas import ChatCompletionRequest, CompletionRequest, describe_validation_error
from app.runtime.sampling import SamplingParams

CHAT = [{"role": "user", "content": "Hi"}]


def refusal(schema: type, body: dict[str, Any]) -> tuple[str, str | None]:
    with pytest.raises(ValidationError) as raised:
        schema.model_validate(body)
    return describe_validation_error(raised.value, schema)


def test_completions_default_to_16_tokens_and_chat_to_the_context() -> None:
    completion = CompletionRequest.model_validate({"model": "m", "prompt": "Hi"})
    chat = ChatCompletionRequest.model_validate({"model": "m", "messages": CHAT})
    assert SamplingParams(**completion.sampling_fields(completion.max_tokens)) == SamplingParams(
        max_tokens=16
    )
    assert SamplingParams(**chat.sampling_fields(chat.token_limit())) == SamplingParams(max_tokens=None)
    explicit_null = CompletionRequest.model_validate({"model": "m", "prompt": "Hi", "max_tokens": None})
    assert explicit_null.max_tokens is None  # as vLLM: up to the context length


def test_max_completion_tokens_wins_over_max_tokens() -> None:
    chat = ChatCompletionRequest.model_validate(
        {"model": "m", "messages": CHAT, "max_tokens": 5, "max_completion_tokens": 7}
    )
    assert chat.token_limit() == 7


def test_openai_and_vllm_sampling_fields_reach_the_sampling_params() -> None:
    body = {
        "model": "m",
        "prompt": "Hi",
        "max_tokens": 3,
        "temperature": 0,  # an integer is a number
        "top_p": 0.9,
        "presence_penalty": 0.5,
        "frequency_penalty": -0.5,
        "seed": 42,
        "stop": "\n",
        "top_k": 20,
        "min_p": 0.05,
        "repetition_penalty": 1.2,
        "stop_token_ids": [2, 3],
        "ignore_eos": True,
        "user": "someone",
    }
    request = CompletionRequest.model_validate(body)
    assert SamplingParams(**request.sampling_fields(request.max_tokens)) == SamplingParams(
        max_tokens=3,
        temperature=0,
        top_p=0.9,
        presence_penalty=0.5,
        frequency_penalty=-0.5,
        seed=42,
        stop=("\n",),
        top_k=20,
        min_p=0.05,
        repetition_penalty=1.2,
        stop_token_ids=(2, 3),
        ignore_eos=True,
    )


@pytest.mark.parametrize(
    "prompt", ["text", ["a", "b"], [1, 2, 3], [[1, 2], [3]]], ids=["str", "strs", "ids", "id-lists"]
)
def test_every_prompt_form_openai_takes(prompt: Any) -> None:
    assert CompletionRequest.model_validate({"model": "m", "prompt": prompt}).prompt == prompt


@pytest.mark.parametrize("prompt", [[], ["a", 1], [[1], "a"], [True], [[]], 5, None])
def test_other_prompts_are_refused_saying_what_a_prompt_is(prompt: Any) -> None:
    message, param = refusal(CompletionRequest, {"model": "m", "prompt": prompt})
    assert param == "prompt"
    assert message.startswith("prompt: prompt must be a string, a non-empty list of strings")


def test_an_unknown_field_is_refused_by_name_with_the_accepted_ones() -> None:
    message, param = refusal(CompletionRequest, {"model": "m", "prompt": "x", "temprature": 1})
    assert param == "temprature"
    assert message.startswith(
        "unknown field 'temprature' in the request body; the fields accepted are model,"
    )
    assert "temperature" in message and "top_k" in message


def test_values_of_the_wrong_json_type_are_refused() -> None:
    assert refusal(CompletionRequest, {"model": "m", "prompt": "x", "max_tokens": "5"}) == (
        "max_tokens: Input should be a valid integer",
        "max_tokens",
    )
    assert refusal(CompletionRequest, {"model": "m", "prompt": "x", "seed": True})[1] == "seed"
    assert refusal(CompletionRequest, {"model": "m", "prompt": "x", "temperature": "0.5"})[1] == "temperature"
    assert refusal(CompletionRequest, {"prompt": "x"}) == (
        "the request body needs the field 'model'",
        "model",
    )


def test_malformed_chat_messages_are_refused_naming_the_message() -> None:
    cases = [
        ([{"role": "robot", "content": "x"}], "messages[0].role", "Input should be 'system', 'developer'"),
        ([*CHAT, {"content": "x"}], "messages[1].role", "the request body needs the field"),
        ([{"role": "user", "content": 5}], "messages[0].content", "Input should be a valid string"),
        (
            [{"role": "user", "content": [{"type": "image_url"}]}],
            "messages[0].content[0].type",
            "Input should be",
        ),
        ([{"role": "user", "content": "x", "mood": "happy"}], "messages[0].mood", "unknown field"),
        (
            [{"role": "assistant", "tool_calls": [{"id": "1"}]}],
            "messages[0].tool_calls",
            "tool calls are not",
        ),
        ([], "messages", "at least 1 item"),
    ]
    for messages, param, words in cases:
        message, got = refusal(ChatCompletionRequest, {"model": "m", "messages": messages})
        assert got == param and words in message, (messages, message)


def test_messages_become_what_a_chat_template_reads() -> None:
    body = {
        "model": "m",
        "messages": [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"role": "assistant", "content": None, "refusal": None, "tool_calls": []},
        ],
    }
    chat = ChatCompletionRequest.model_validate(body)
    assert [m.template_message() for m in chat.messages] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "a\nb"},
        {"role": "assistant", "content": ""},
    ]


def test_tools_and_constrained_formats_are_refused() -> None:
    assert refusal(
        ChatCompletionRequest, {"model": "m", "messages": CHAT, "tools": [{"type": "function"}]}
    ) == (
        "tools: tools are not supported by this server",
        "tools",
    )
    message, param = refusal(
        ChatCompletionRequest, {"model": "m", "messages": CHAT, "response_format": {"type": "json_object"}}
    )
    assert param == "response_format" and 'only {"type": "text"} is supported' in message


def test_empty_stop_strings_are_refused() -> None:
    assert refusal(CompletionRequest, {"model": "m", "prompt": "x", "stop": ["a", ""]}) == (
        "stop: stop strings must not be empty",
        "stop",
    )


def test_stream_options_carry_include_usage() -> None:
    body = {"model": "m", "prompt": "x", "stream": True, "stream_options": {"include_usage": True}}
    assert CompletionRequest.model_validate(body).include_usage
    assert not CompletionRequest.model_validate({"model": "m", "prompt": "x", "stream": True}).include_usage
