from __future__ import annotations

import logging
import re

import pytest
from fastapi.testclient import TestClient


def test_a_request_id_is_generated_when_none_is_sent(client: TestClient) -> None:
    first, second = client.get("/v2").headers["x-request-id"], client.get("/v2").headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", first) and first != second


@pytest.mark.parametrize("sent", ["bad id with spaces", "x" * 129, "<script>"])
def test_an_unusable_request_id_is_replaced(client: TestClient, sent: str) -> None:
    echoed = client.get("/v2", headers={"X-Request-ID": sent}).headers["x-request-id"]
    assert echoed != sent and re.fullmatch(r"[0-9a-f]{32}", echoed)


def test_errors_are_logged_with_the_request_id_and_model(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="app.errors"):
        client.post("/v2/models/mlp/infer", content=b"{", headers={"X-Request-ID": "trace-1"})
    messages = [r.getMessage() for r in caplog.records]
    assert any(
        m.startswith(
            "request trace-1: POST /v2/models/mlp/infer model=mlp -> 400 request body is not valid JSON"
        )
        for m in messages
    ), messages
