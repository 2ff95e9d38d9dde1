"""The API docs at ``/docs`` render in real headless Chromium with every other origin blocked.

The browser may reach the server on 127.0.0.1 and nothing else (every other request is
aborted and recorded), as on an air-gapped cluster: the page must still draw Swagger UI
and list the server's endpoints, the ones its OpenAPI schema has.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.browser


def test_the_api_docs_render_offline_and_list_every_endpoint(chromium: Any, explorer_server: Any) -> None:
    origin = explorer_server.base_url
    blocked: list[str] = []
    errors: list[str] = []

    def only_the_server(route: Any) -> None:
        if route.request.url.startswith(origin + "/"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    context = chromium.new_context()
    try:
        context.route("**/*", only_the_server)
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(f"{origin}/docs")
        page.wait_for_selector(".swagger-ui .opblock-summary-path")
        listed = page.locator(".opblock-summary-path").evaluate_all(
            "nodes => nodes.map(n => n.getAttribute('data-path'))"
        )
        title = page.locator(".swagger-ui .info .title").inner_text()
    finally:
        context.close()
    schema = httpx.get(f"{origin}/openapi.json").json()
    assert set(listed) == set(schema["paths"]), set(schema["paths"]) ^ set(listed)
    assert "/v2/models/{model_name}/infer" in listed
    assert title.startswith("mininn-serve")
    assert errors == [] and blocked == [], (errors, blocked)
