"""The model explorer's Chat tab in real headless Chromium against a real server of text models.

The server is the protocol tests' (``tests/app/_generation_support.py``): ``tiny`` and
``slow`` (20 ms a token) chat, ``faulty`` fails mid-generation, ``tiny-ids`` has no
tokenizer, ``tiny-plain`` no chat template, ``mlp`` does not generate.
What the page shows is checked against the server's answer to the request the page sent.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from _generation_support import GenerationServer
from _ui_support import NARROW, WIDE

pytestmark = pytest.mark.browser

REPLY = "[data-testid=chat-log] .bubble[data-role={role}]:last-child"


def settings(page: Any, **values: Any) -> None:
    for name, value in values.items():
        page.fill(f"[data-testid=chat] [data-setting={name}]", str(value))


def send(page: Any, text: str, route: str = "/v1/chat/completions") -> dict[str, Any]:
    """Type ``text``, press Enter, and return the request body the page sent."""
    with page.expect_request(lambda r: r.url.endswith(route)) as sent:
        page.fill("[data-testid=chat] form textarea", text)
        page.press("[data-testid=chat] form textarea", "Enter")
    return json.loads(sent.value.post_data)


def finished(page: Any, status: str = "done", role: str = "assistant") -> Any:
    reply = page.locator(REPLY.format(role=role))
    page.wait_for_selector(f"{REPLY.format(role=role)}[data-status={status}]")
    return reply


def answer_of(server: GenerationServer, route: str, body: dict[str, Any]) -> dict[str, Any]:
    """The server's non-streaming answer to the page's request."""
    plain = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    response = httpx.post(f"{server.base_url}{route}", json=plain, timeout=60)
    assert response.status_code == 200, response.text
    return response.json()


def metric(server: GenerationServer, name: str, model: str) -> float:
    text = httpx.get(f"{server.base_url}/metrics", timeout=30).text
    found = re.search(rf'^{name}{{model="{model}"}} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def test_a_text_model_opens_on_its_chat_tab_and_a_greedy_answer_is_the_apis(
    open_generation_page, generation_server
) -> None:
    page = open_generation_page("/ui/models/slow")
    tabs = page.locator("[role=tab]").all_text_contents()
    assert tabs[0] == "Chat" and "Try it" in tabs
    assert page.get_attribute("#tab-chat", "aria-selected") == "true"
    settings(page, temperature=0, max_tokens=12, system="Answer briefly.")
    first = send(page, "hi")
    assert first["stream"] is True and first["stream_options"] == {"include_usage": True}
    assert first["messages"] == [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "hi"},
    ]
    assert (first["temperature"], first["max_tokens"], first["top_p"]) == (0, 12, 1)
    reply = finished(page)
    direct = answer_of(generation_server, "/v1/chat/completions", first)
    content = direct["choices"][0]["message"]["content"]
    assert content and reply.locator(".bubble-text").text_content() == content
    usage = reply.locator("[data-testid=chat-usage]")
    assert int(usage.get_attribute("data-prompt-tokens")) == direct["usage"]["prompt_tokens"]
    assert int(usage.get_attribute("data-completion-tokens")) == direct["usage"]["completion_tokens"]
    assert "tokens/s" in usage.text_content()

    second = send(page, "and then?")  # the conversation goes back with the next message
    assert second["messages"][1:] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": content},
        {"role": "user", "content": "and then?"},
    ]
    reply = finished(page)
    direct = answer_of(generation_server, "/v1/chat/completions", second)
    assert reply.locator(".bubble-text").text_content() == direct["choices"][0]["message"]["content"]
    assert page.locator("[data-testid=chat-log] .bubble").count() == 4


def test_tokens_show_as_they_arrive(open_generation_page) -> None:
    page = open_generation_page("/ui/models/slow")
    settings(page, temperature=0, max_tokens=30)
    page.evaluate(
        """() => {
            window.seen = [];
            const log = document.querySelector("[data-testid=chat-log]");
            new MutationObserver(() => {
                const text = log.querySelector(".bubble[data-role=assistant]:last-child .bubble-text");
                if (text) window.seen.push(text.textContent.length);
            }).observe(log, { subtree: true, childList: true, characterData: true });
        }"""
    )
    send(page, "tell me a story")
    reply = finished(page)
    seen = page.evaluate("window.seen")
    final = len(reply.locator(".bubble-text").text_content())
    growing = sorted(set(seen))
    assert growing[-1] == final > 0
    assert len(growing) >= 10, f"the text grew in only {len(growing)} steps: {growing}"


def test_stop_cancels_the_generation_on_the_server(open_generation_page, generation_server) -> None:
    page = open_generation_page("/ui/models/slow")
    settings(page, temperature=0, max_tokens=400)  # 8 s at 20 ms a token
    send(page, "go on")
    page.wait_for_function(
        """() => {
            const log = document.querySelector("[data-testid=chat-log]");
            const t = log.querySelector(".bubble[data-role=assistant] .bubble-text");
            return t && t.textContent.length >= 5;
        }"""
    )
    assert metric(generation_server, "mininn_num_requests_running", "slow") == 1
    stopped_at = time.monotonic()
    page.get_by_role("button", name="Stop").click()
    reply = finished(page, "stopped")
    assert "Stopped" in reply.text_content()
    while metric(generation_server, "mininn_num_requests_running", "slow") != 0:
        assert time.monotonic() - stopped_at < 3, "the generation still runs after Stop"
        time.sleep(0.05)
    generated = metric(generation_server, "mininn_generation_tokens_total", "slow")
    time.sleep(0.3)
    assert metric(generation_server, "mininn_generation_tokens_total", "slow") == generated
    assert page.get_by_role("button", name="Send").is_enabled()
    assert page.get_by_role("button", name="Stop").is_disabled()


def test_an_error_shows_in_the_bubble_whether_before_or_during_the_stream(
    open_generation_page, generation_server
) -> None:
    page = open_generation_page("/ui/models/faulty")
    settings(page, temperature=0, max_tokens=20)
    body = send(page, "hi")
    reply = finished(page, "error")
    with httpx.stream("POST", f"{generation_server.base_url}/v1/chat/completions", json=body) as response:
        assert response.status_code == 200
        frames = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: {")]
    message = frames[-1]["error"]["message"]
    assert message and message in reply.locator(".error-box").text_content()

    page = open_generation_page("/ui/models/tiny")
    settings(page, temperature=-1)
    body = send(page, "hi")
    reply = finished(page, "error")
    response = httpx.post(f"{generation_server.base_url}/v1/chat/completions", json=body, timeout=30)
    assert response.status_code == 400
    shown = reply.locator(".error-box").text_content()
    assert "HTTP 400" in shown and response.json()["error"]["message"] in shown
    assert reply.locator(".bubble-text").text_content() == ""
    settings(page, temperature=0, max_tokens=4)  # the failed exchange is not sent again
    assert send(page, "again")["messages"] == [{"role": "user", "content": "again"}]
    finished(page)


def test_without_a_chat_template_the_tab_continues_a_prompt(open_generation_page, generation_server) -> None:
    page = open_generation_page("/ui/models/tiny-plain")
    assert page.get_attribute("[data-testid=chat]", "data-mode") == "completion"
    assert page.locator("[data-setting=system]").count() == 0
    settings(page, temperature=0, max_tokens=10)
    body = send(page, "Hello", route="/v1/completions")
    assert body["prompt"] == "Hello" and "messages" not in body
    reply = finished(page, role="completion")
    direct = answer_of(generation_server, "/v1/completions", body)
    assert reply.locator(".bubble-text").text_content() == direct["choices"][0]["text"]


def test_a_model_without_tokenizer_explains_and_other_models_have_no_chat_tab(open_generation_page) -> None:
    page = open_generation_page("/ui/models/tiny-ids")
    page.get_by_role("tab", name="Chat").click()
    assert page.get_attribute("[data-testid=chat]", "data-mode") == "ids"
    assert "token ids only" in page.text_content("[data-testid=chat-ids-only]")
    assert page.locator("[data-testid=chat] textarea").count() == 0

    page = open_generation_page("/ui/models/mlp")
    assert "Chat" not in page.locator("[role=tab]").all_text_contents()
    assert page.locator("#tab-chat").count() == 0
    assert page.get_attribute("#tab-try", "aria-selected") == "true"
    page = open_generation_page("/ui/models/mlp#chat")  # a stale link opens the default tab
    assert page.get_attribute("#tab-try", "aria-selected") == "true"


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["1280x800", "390x844"])
def test_the_chat_tab_fits_the_screen_and_is_screenshotted(
    open_generation_page, screenshot_dir: Path, viewport
) -> None:
    page = open_generation_page("/ui/models/slow", viewport)
    settings(page, temperature=0, max_tokens=40, system="You are a tiny random test model.")
    send(page, "Hello! What can you do?")
    finished(page)
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the chat tab is {overflow}px wider than the {viewport['width']}px screen"
    target = screenshot_dir / f"chat-{'wide' if viewport is WIDE else 'narrow'}.png"
    page.screenshot(path=str(target), full_page=True)
    assert target.stat().st_size > 10_000
