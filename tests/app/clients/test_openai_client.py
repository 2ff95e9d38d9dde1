"""The stock ``openai`` client against a real server of text-generation models.

The models are ``_generation_models``' tiny GPTs served in float64; what greedy
decoding must give is computed in this process by the plain loop over the same
weights (``_generation_support.reference_text``), without the engine.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from _generation_support import GenerationServer, chat_prompt, reference_ids, reference_text

openai = pytest.importorskip("openai")

CHAT = [{"role": "user", "content": "Hi there"}]


@pytest.fixture(scope="module")
def client(generation_server: GenerationServer) -> Iterator[Any]:
    base_url = f"{generation_server.base_url}/v1"
    with openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0) as made:
        yield made


def test_models_list_names_the_text_generation_models_only(client: Any) -> None:
    listed = {model.id: model for model in client.models.list()}
    assert set(listed) == {"tiny", "tiny-ids", "tiny-plain", "faulty", "slow"}  # not the mlp models
    assert listed["tiny"].object == "model" and listed["tiny"].owned_by == "mininn-serve"
    assert listed["tiny"].model_extra["max_model_len"] == 64
    assert client.models.retrieve("slow").id == "slow"


def test_greedy_completion_is_the_reference_loops_text(
    client: Any, generation_server: GenerationServer
) -> None:
    completion = client.completions.create(model="tiny", prompt="Hello", max_tokens=10, temperature=0)
    expected = reference_text(generation_server.repository, "tiny", "Hello", 10)
    (choice,) = completion.choices
    assert (choice.text, choice.finish_reason, choice.index) == (expected, "length", 0)
    assert completion.object == "text_completion" and completion.model == "tiny"
    assert completion.id.startswith("cmpl-")
    usage = completion.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (6, 10, 16)


def test_completions_max_tokens_defaults_to_16_as_openai(client: Any) -> None:
    completion = client.completions.create(model="tiny", prompt="Hello", temperature=0)
    assert completion.usage.completion_tokens == 16 and completion.choices[0].finish_reason == "length"


def test_a_list_of_prompts_gives_a_choice_each_in_order(
    client: Any, generation_server: GenerationServer
) -> None:
    prompts = ["Hello", "Once upon a time", "x"]
    completion = client.completions.create(model="tiny", prompt=prompts, max_tokens=6, temperature=0)
    texts = [reference_text(generation_server.repository, "tiny", p, 6) for p in prompts]
    assert [(c.index, c.text) for c in completion.choices] == list(enumerate(texts))
    assert completion.usage.prompt_tokens == sum(len(p.encode()) + 1 for p in prompts)
    assert completion.usage.completion_tokens == 18


def test_streamed_completion_with_usage_adds_up_to_the_plain_one(client: Any) -> None:
    plain = client.completions.create(model="tiny", prompt="Hello", max_tokens=12, temperature=0)
    chunks = list(
        client.completions.create(
            model="tiny",
            prompt="Hello",
            max_tokens=12,
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    *texts, last, usage_chunk = chunks
    assert "".join(c.choices[0].text for c in texts) == plain.choices[0].text
    assert all(c.choices[0].finish_reason is None for c in texts)
    assert (last.choices[0].text, last.choices[0].finish_reason) == ("", "length")
    assert usage_chunk.choices == [] and usage_chunk.usage.completion_tokens == 12
    assert len({c.id for c in chunks}) == 1


def test_greedy_chat_is_the_reference_loops_answer(
    client: Any, generation_server: GenerationServer
) -> None:
    answer = client.chat.completions.create(model="tiny", messages=CHAT, max_tokens=8, temperature=0)
    ids = reference_ids(generation_server.repository, "tiny", chat_prompt(CHAT), 8)
    (choice,) = answer.choices
    assert choice.message.role == "assistant"
    assert choice.message.content == bytes(ids).decode("utf-8", "replace")
    assert choice.finish_reason == "length" and answer.object == "chat.completion"
    assert answer.usage.prompt_tokens == len(chat_prompt(CHAT))


def test_chat_without_max_tokens_runs_to_the_context_length(client: Any) -> None:
    answer = client.chat.completions.create(
        model="tiny", messages=CHAT, temperature=0, extra_body={"ignore_eos": True}
    )
    assert answer.usage.total_tokens == 64 and answer.choices[0].finish_reason == "length"


def test_streamed_chat_starts_with_the_role_and_ends_with_done(client: Any) -> None:
    plain = client.chat.completions.create(model="tiny", messages=CHAT, max_tokens=8, temperature=0)
    stream = client.chat.completions.create(
        model="tiny", messages=CHAT, max_tokens=8, temperature=0, stream=True
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text == plain.choices[0].message.content
    assert chunks[-1].choices[0].finish_reason == "length" and chunks[-1].usage is None


def test_seeded_sampling_repeats_and_vllm_extras_are_taken(client: Any) -> None:
    def sample(seed: int) -> str:
        return client.completions.create(
            model="tiny",
            prompt="Hello",
            max_tokens=10,
            temperature=1.5,
            seed=seed,
            extra_body={"top_k": 50, "min_p": 0.01, "repetition_penalty": 1.1},
        ).choices[0].text

    assert sample(7) == sample(7)
    assert len({sample(seed) for seed in range(4)}) > 1


def test_stop_strings_and_stop_token_ids_end_the_text(
    client: Any, generation_server: GenerationServer
) -> None:
    full = reference_text(generation_server.repository, "tiny", "Hello", 12)
    stop = full[4:6]
    cut = client.completions.create(model="tiny", prompt="Hello", max_tokens=12, temperature=0, stop=[stop])
    assert cut.choices[0].text == full[: full.index(stop)] and cut.choices[0].finish_reason == "stop"
    token = ord(full[2])
    ids = client.completions.create(
        model="tiny", prompt="Hello", max_tokens=12, temperature=0, extra_body={"stop_token_ids": [token]}
    )
    assert ids.choices[0].finish_reason == "stop" and ids.usage.completion_tokens == full.index(full[2]) + 1


def test_completion_logprobs_have_openais_shape(client: Any) -> None:
    completion = client.completions.create(
        model="tiny", prompt="Hello", max_tokens=5, temperature=0, logprobs=3
    )
    logprobs = completion.choices[0].logprobs
    assert "".join(logprobs.tokens) == completion.choices[0].text
    assert logprobs.text_offset == [0, 1, 2, 3, 4]
    for token, logprob, top in zip(logprobs.tokens, logprobs.token_logprobs, logprobs.top_logprobs):
        assert logprob < 0 and len(top) == 3
        assert top[token] == logprob and max(top.values()) == logprob  # greedy: the best


def test_chat_logprobs_have_openais_shape(client: Any) -> None:
    answer = client.chat.completions.create(
        model="tiny", messages=CHAT, max_tokens=4, temperature=0, logprobs=True, top_logprobs=2
    )
    content = answer.choices[0].logprobs.content
    assert "".join(item.token for item in content) == answer.choices[0].message.content
    for item in content:
        assert item.bytes == list(item.token.encode()) and len(item.top_logprobs) == 2
        assert item.top_logprobs[0].token == item.token and item.top_logprobs[0].logprob == item.logprob


def test_token_id_prompts_serve_a_model_without_a_tokenizer(client: Any) -> None:
    completion = client.completions.create(model="tiny-ids", prompt=[72, 105], max_tokens=4, temperature=0)
    assert completion.choices[0].text == "" and completion.usage.completion_tokens == 4
    with pytest.raises(openai.BadRequestError) as raised:
        client.completions.create(model="tiny-ids", prompt="Hi", max_tokens=4)
    assert "has no tokenizer" in raised.value.message


# ---- bad input: openai's exceptions with our messages ------------------------------------------


def test_an_unknown_model_is_not_found_naming_the_models_that_generate(client: Any) -> None:
    with pytest.raises(openai.NotFoundError) as raised:
        client.completions.create(model="nope", prompt="Hi")
    error = raised.value.body
    assert error["code"] == "model_not_found" and error["param"] == "model"
    assert error["message"].startswith("The model 'nope' does not exist; the models that generate text here")
    assert "tiny" in error["message"]


def test_a_model_that_does_not_generate_is_refused_naming_those_that_do(client: Any) -> None:
    with pytest.raises(openai.NotFoundError) as raised:
        client.chat.completions.create(model="mlp", messages=CHAT)
    assert "The model 'mlp' does not generate text (it serves /v2/models/mlp/infer)" in raised.value.message
    assert "faulty, slow, tiny, tiny-ids" in raised.value.message


def test_an_unknown_sampling_parameter_is_a_bad_request_naming_it(client: Any) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.completions.create(model="tiny", prompt="Hi", extra_body={"top_kk": 5})
    assert raised.value.body["param"] == "top_kk"
    expected = "unknown field 'top_kk' in the request body; the fields accepted are model, temperature"
    assert raised.value.body["message"].startswith(expected)


def test_a_prompt_over_the_context_length_is_a_bad_request(client: Any) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.completions.create(model="tiny", prompt="x" * 80, max_tokens=1)
    assert raised.value.body["code"] == "context_length_exceeded"
    expected = "the prompt has 81 tokens, and model 'tiny' has a context length of 64 tokens"
    assert expected in raised.value.message


def test_max_tokens_over_the_context_length_is_a_bad_request(client: Any) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model="tiny", messages=CHAT, max_tokens=100)
    assert "lower max_tokens to at most" in raised.value.message


def test_a_malformed_chat_message_is_a_bad_request_naming_it(client: Any) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model="tiny", messages=[CHAT[0], {"role": "user"}, {"content": "x"}])
    assert raised.value.body["param"] == "messages[2].role"
    assert raised.value.body["message"] == "the request body needs the field 'messages[2].role'"
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": 5}])
    assert raised.value.body["message"].startswith("messages[0].content: Input should be a valid string")


def test_bad_sampling_values_are_bad_requests(client: Any) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.completions.create(model="tiny", prompt="Hi", temperature=-1)
    assert raised.value.body["message"].startswith("sampling parameter 'temperature' must be >= 0")
    with pytest.raises(openai.BadRequestError) as raised:
        client.completions.create(model="tiny", prompt="Hi", n=2)
    assert raised.value.body["message"].startswith("sampling parameter 'n' must be 1, got 2")


def test_a_model_failing_mid_stream_ends_with_an_error_event_and_the_server_goes_on(client: Any) -> None:
    stream = client.completions.create(model="faulty", prompt="Hi", max_tokens=30, temperature=0, stream=True)
    texts = []
    with pytest.raises(openai.APIError) as raised:
        for chunk in stream:
            texts.append(chunk.choices[0].text)
    assert len(texts) == 12 - 3  # the prompt is 3 tokens; the model fails at 12
    assert "model 'faulty' failed while generating (after 9 tokens)" in raised.value.message
    assert raised.value.body["type"] == "server_error"
    assert client.completions.create(model="tiny", prompt="Hi", max_tokens=2).usage.completion_tokens == 2


def test_the_api_is_also_under_kservers_openai_prefix(generation_server: GenerationServer) -> None:
    base_url = f"{generation_server.base_url}/openai/v1"
    with openai.OpenAI(base_url=base_url, api_key="x", max_retries=0) as kserve:
        assert "tiny" in {m.id for m in kserve.models.list()}
        answer = kserve.chat.completions.create(model="tiny", messages=CHAT, max_tokens=3, temperature=0)
    assert answer.usage.completion_tokens == 3
    response = httpx.post(f"{base_url}/completions", json={"model": "x", "prompt": "y"})
    assert response.status_code == 404 and response.json()["error"]["code"] == "model_not_found"
