"""``GET /v2/models/{m}/config`` tells a client how to talk to a text model (``mininn.generation``)."""

from __future__ import annotations

import httpx
from _generation_support import GenerationServer


def config(server: GenerationServer, model: str) -> dict:
    response = httpx.get(f"{server.base_url}/v2/models/{model}/config", timeout=30)
    assert response.status_code == 200, response.text
    return response.json()["mininn"]


def test_a_text_model_says_its_context_length_tokenizer_and_chat_template(
    generation_server: GenerationServer,
) -> None:
    expected = {
        "tiny": {"context_length": 64, "tokenizer": True, "chat_template": True},
        "slow": {"context_length": 512, "tokenizer": True, "chat_template": True},
        "tiny-ids": {"context_length": 64, "tokenizer": False, "chat_template": False},
        "tiny-plain": {"context_length": 64, "tokenizer": True, "chat_template": False},
    }
    for model, generation in expected.items():
        assert config(generation_server, model)["generation"] == generation, model
    listed = httpx.get(f"{generation_server.base_url}/v1/models", timeout=30).json()["data"]
    lengths = {card["id"]: card["max_model_len"] for card in listed}
    assert {m: lengths[m] for m in expected} == {m: g["context_length"] for m, g in expected.items()}


def test_the_chat_template_flag_is_what_the_chat_route_does(generation_server: GenerationServer) -> None:
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    for model in ("tiny", "tiny-plain", "tiny-ids"):
        response = httpx.post(
            f"{generation_server.base_url}/v1/chat/completions", json={**body, "model": model}, timeout=30
        )
        chat = config(generation_server, model)["generation"]["chat_template"]
        assert (response.status_code == 200) == chat, (model, response.text)


def test_a_model_that_does_not_generate_has_no_generation_section(
    generation_server: GenerationServer,
) -> None:
    assert "generation" not in config(generation_server, "mlp")
