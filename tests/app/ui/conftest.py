"""Fixtures of the model explorer's browser tests: a real server and headless Chromium.

The server is ``python -m app`` on a free port of 127.0.0.1 with a repository of the
demo models (``digits``, ``minilm``), a small ``mlp`` (for the generic tensor editor)
and a ``broken`` model (for the not-ready reason), and a write key. The browser is
Debian's ``/usr/bin/chromium`` driven by ``playwright`` (never ``playwright install``);
the tests are skipped, with the reason, where either is missing.

Every page a test opens is watched: a JavaScript error, a Content-Security-Policy
violation or a request to any other origin fails the test at teardown.
Screenshots go to a temporary folder, or to ``docs/screenshots`` with
``MININN_UPDATE_SCREENSHOTS=1``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _app_support import MLP_CONFIG, Server, mlp_weights, run_server, write_model
from _ui_support import CHROMIUM, CHROMIUM_ARGS, SCREENSHOTS, WIDE, WRITE_KEY

from models.demos import seed_repository


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip the browser tests, saying why, where Chromium or playwright is missing."""
    reason = None
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing (apt-get install -y chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            reason = "the playwright package is missing (pip install playwright)"
    if reason is None:
        return
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def explorer_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A real server on the demo models, ``mlp`` and ``broken``, with ``MININN_API_KEY`` set."""
    folder = tmp_path_factory.mktemp("explorer")
    repository = folder / "model_repository"
    seed_repository(repository, names=["digits", "minilm"])  # smollm2 loads for 30+ s
    write_model(repository, "mlp", {1: mlp_weights(1)})
    broken = {"architecture": "mlp", "config": {**MLP_CONFIG, "in_features": 5}}
    write_model(repository, "broken", {1: mlp_weights(4)}, broken)
    with run_server(
        repository, folder / "server.log", MININN_SEED_REPOSITORY="false", MININN_API_KEY=WRITE_KEY
    ) as running:
        running.wait_ready(60)
        yield running


@pytest.fixture(scope="module")
def playwright() -> Iterator[Any]:
    """The Playwright driver, one per test file.

    Playwright's sync API keeps an asyncio loop marked running in the main thread for as long as
    its driver lives, so ``asyncio.run`` in any later test on the same xdist worker would fail
    ("cannot be called from a running event loop"): the driver stops when its file's tests end.
    (``package`` scope would be the whole session here: these folders have no ``__init__.py``.)
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def chromium(playwright: Any) -> Iterator[Any]:
    """Headless Chromium, one per test file (as the driver)."""
    browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    yield browser
    browser.close()


@pytest.fixture(scope="module")
def chromium_with_scrollbars(playwright: Any) -> Iterator[Any]:
    """Headless Chromium that draws scrollbars, as desktop browsers do (playwright's default hides them)."""
    browser = playwright.chromium.launch(
        executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, ignore_default_args=["--hide-scrollbars"]
    )
    yield browser
    browser.close()


@dataclass
class Watch:
    """What went wrong on the pages of one test."""

    errors: list[str] = field(default_factory=list)
    csp_violations: list[str] = field(default_factory=list)
    foreign_requests: list[str] = field(default_factory=list)


@pytest.fixture
def open_page(
    chromium: Any, explorer_server: Server, request: pytest.FixtureRequest
) -> Iterator[Callable[..., Any]]:
    """``open_page(path, viewport=WIDE)`` -> a Playwright page at ``path`` of the server, watched.

    ``open_page(..., scrollbars=True)`` opens it in :func:`chromium_with_scrollbars`.
    """
    yield from watched_pages(chromium, explorer_server.base_url, request)


@pytest.fixture
def open_generation_page(
    chromium: Any, generation_server: Any, request: pytest.FixtureRequest
) -> Iterator[Callable[..., Any]]:
    """:func:`open_page` on the text-generation models' server (``tests/app/_generation_support.py``)."""
    yield from watched_pages(chromium, generation_server.base_url, request)


def watched_pages(chromium: Any, origin: str, request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    """The page factory of :func:`open_page` for the server at ``origin``; checks the watch at the end."""
    watch = Watch()
    contexts: list[Any] = []

    def on_console(message: Any) -> None:
        if "Content Security Policy" in message.text or "Content-Security-Policy" in message.text:
            watch.csp_violations.append(message.text)

    def route(request_route: Any) -> None:
        url = request_route.request.url
        if url.startswith(origin + "/") or url.startswith(("data:", "blob:", "about:")):
            request_route.continue_()
        else:
            watch.foreign_requests.append(url)
            request_route.abort()

    def factory(path: str, viewport: dict[str, int] = WIDE, *, scrollbars: bool = False) -> Any:
        browser = request.getfixturevalue("chromium_with_scrollbars") if scrollbars else chromium
        context = browser.new_context(viewport=viewport, device_scale_factor=1)
        contexts.append(context)
        context.route("**/*", route)
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.on("pageerror", lambda error: watch.errors.append(str(error)))
        page.on("console", on_console)
        page.goto(origin + path)
        # the first load of a page fetches its scripts and the model's metadata; on a CI machine
        # busy with the slowest tests (they run first) that has taken over 20 s
        page.wait_for_selector("main[data-loaded=true]", timeout=60_000)
        return page

    yield factory
    for context in contexts:
        context.close()
    assert watch.errors == [], "JavaScript errors on the page"
    assert watch.csp_violations == [], "Content-Security-Policy violations"
    assert watch.foreign_requests == [], "requests to other origins"


@pytest.fixture(scope="session")
def screenshot_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: docs/screenshots with MININN_UPDATE_SCREENSHOTS=1, else a temporary folder."""
    if os.environ.get("MININN_UPDATE_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        return SCREENSHOTS
    return tmp_path_factory.mktemp("screenshots")
