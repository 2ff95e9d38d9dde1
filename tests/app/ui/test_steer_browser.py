"""The steer tab in headless Chromium: the plain and steered answers, and computing a vector.

The server is the protocol tests' server of tiny language models (``generation_server``); what the
page shows is checked against the same requests sent with httpx.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest
from _app_support import WRITE_HEADERS, WRITE_KEY
from _generation_support import GenerationServer
from safetensors.numpy import save

pytestmark = pytest.mark.browser

MODULE = "blocks.0.out"


@pytest.fixture
def page(chromium: Any, generation_server: GenerationServer) -> Iterator[Any]:
    vector = np.random.default_rng(11).standard_normal(32).astype(np.float32)
    url = f"{generation_server.base_url}/v2/models/tiny/steering/ui-push"
    stored = httpx.put(url, content=save({MODULE: vector}), headers=WRITE_HEADERS, timeout=30)
    assert stored.status_code == 201, stored.text
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(30_000)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.goto(f"{generation_server.base_url}/ui/models/tiny#steer")
    opened.wait_for_selector("main[data-loaded=true]")
    yield opened
    context.close()
    for name in ("ui-push", "ui-calm"):
        httpx.delete(f"{generation_server.base_url}/v2/models/tiny/steering/{name}", headers=WRITE_HEADERS)
    assert errors == []


def chat(server: GenerationServer, steering: list[dict[str, Any]] | None) -> str:
    body: dict[str, Any] = {"model": "tiny", "messages": [{"role": "user", "content": "Hi"}],
                            "temperature": 0, "max_tokens": 8}
    if steering:
        body["steering"] = steering
    answer = httpx.post(f"{server.base_url}/v1/chat/completions", json=body, timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()["choices"][0]["message"]["content"]


def test_the_steer_tab_streams_the_plain_and_steered_answers_side_by_side(
    page: Any, generation_server: GenerationServer
) -> None:
    page.wait_for_selector("[data-testid=steer-vector] option[value=ui-push]", state="attached")
    page.select_option("[data-testid=steer-vector]", "ui-push")
    page.select_option("[data-testid=steer-layer]", MODULE)
    page.locator("[data-testid=steer-scale]").fill("4")
    assert page.text_content("[data-testid=steer-scale-value]") == "4"
    page.fill("[data-testid=steer-message]", "Hi")
    page.fill("[data-testid=steer-max-tokens]", "8")
    page.click("[data-testid=steer-compare]")
    page.wait_for_selector("[data-testid=steer-plain][data-status=done]")
    page.wait_for_selector("[data-testid=steer-steered][data-status=done]")
    plain = page.text_content("[data-testid=steer-plain]")
    steered = page.text_content("[data-testid=steer-steered]")
    assert plain == chat(generation_server, None)
    assert steered == chat(generation_server, [{"name": "ui-push", "scale": 4, "modules": [MODULE]}])
    assert steered != plain


def test_the_compute_form_stores_a_vector_the_steer_form_then_offers(
    page: Any, generation_server: GenerationServer
) -> None:
    page.wait_for_selector("[data-testid=compute-submit]")
    page.fill("[data-testid=compute-name]", "ui-calm")
    page.fill("[data-testid=compute-positive]", "calm\nquiet")
    page.fill("[data-testid=compute-negative]", "loud\nangry")
    page.fill("[data-testid=compute-layer]", MODULE)
    page.click("[data-testid=compute-submit]")  # no key first: refused, named
    page.wait_for_selector("[data-testid=compute-status][data-status=error]")
    assert "401" in page.text_content("[data-testid=compute-status]")
    page.fill("[data-testid=compute-key]", WRITE_KEY)
    page.click("[data-testid=compute-submit]")
    page.wait_for_selector("[data-testid=compute-status][data-status=done]")
    page.wait_for_selector("[data-testid=steer-vector] option[value=ui-calm]", state="attached")
    listed = httpx.get(f"{generation_server.base_url}/v2/models/tiny/steering", timeout=30).json()
    assert {"name": "ui-calm", "modules": [MODULE], "width": [32]} in listed["vectors"]
