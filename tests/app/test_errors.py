from __future__ import annotations

import logging

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel

from app.errors import ServiceUnavailableError, install_error_handlers


def test_unknown_route_is_404_as_json(client: TestClient) -> None:
    response = client.get("/v2/nothing/here")
    assert (response.status_code, response.json()) == (
        404,
        {"error": "no route for GET /v2/nothing/here; see /docs for the API"},
    )


def test_wrong_method_is_405_as_json(client: TestClient) -> None:
    response = client.post("/v2/health/live")
    assert response.status_code == 405
    assert response.json() == {"error": "method POST is not allowed on /v2/health/live; allowed: GET"}
    assert response.headers["allow"] == "GET"


def test_an_unexpected_exception_is_a_500_without_internals(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(ready_only: bool = False) -> list:
        raise RuntimeError("secret internals at /srv/app.py")

    monkeypatch.setattr(client.app.state.service.manager, "index", explode)
    with caplog.at_level(logging.ERROR, logger="app.errors"):
        response = client.post("/v2/repository/index", headers={"X-Request-ID": "req-500"})
    assert response.status_code == 500
    assert response.json() == {
        "error": "internal server error (request id req-500); the server log has the details"
    }
    assert response.headers["x-request-id"] == "req-500"
    assert "secret" not in response.text and "Traceback" not in response.text
    record = next(r for r in caplog.records if "failed unexpectedly" in r.getMessage())
    assert record.getMessage() == "request req-500: POST /v2/repository/index failed unexpectedly"
    assert record.exc_info is not None and "secret internals" in str(record.exc_info[1])


class Item(BaseModel):
    count: int


def small_app() -> TestClient:
    app = FastAPI()
    install_error_handlers(app)

    @app.post("/items")
    async def create(item: Item, limit: int = 3) -> dict:
        return {"count": item.count}

    @app.get("/busy")
    async def busy() -> dict:
        raise ServiceUnavailableError("queue full", retry_after=7)

    return TestClient(app)


def test_body_validation_errors_are_422_as_json() -> None:
    response = small_app().post("/items", json={"cnt": 1})
    assert (response.status_code, response.json()) == (422, {"error": "body.count: Field required"})


def test_invalid_json_bodies_are_400() -> None:
    response = small_app().post("/items", content=b"{", headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"].startswith("body.1: JSON decode error")


def test_query_validation_errors_are_400() -> None:
    response = small_app().post("/items?limit=x", json={"count": 1})
    assert (response.status_code, response.json()) == (
        400,
        {
            "error": "query parameter 'limit': Input should be a valid integer, "
            "unable to parse string as an integer"
        },
    )


def test_service_errors_carry_their_headers() -> None:
    response = small_app().get("/busy")
    assert (response.status_code, response.json()) == (503, {"error": "queue full"})
    assert response.headers["retry-after"] == "7"
