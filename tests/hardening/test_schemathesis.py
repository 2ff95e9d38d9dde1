"""Schemathesis against the app's own OpenAPI schema, in process, with a bounded number of examples.

Every operation of ``/openapi.json`` gets generated requests (path, query,
headers and bodies from the schema, plus schema-violating ones), sent with
the write key so the write routes are exercised past the key check. The
checks: no 5xx other than the 503 a model that does not serve gives, status
codes the operation documents, content types and bodies that match the
schema, and documented headers.

The app is built for schemathesis's own ASGI client (which runs its lifespan),
on a repository of its own: generated writes (unload, delete, model.json
replacements) change it as they go, which is fine.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from _app_support import make_repository
from _hardening_support import bearer, examples
from hypothesis import HealthCheck, settings
from schemathesis import checks
from schemathesis.python import asgi

import models
from app import Settings, create_app

pytestmark = pytest.mark.timeout(300)


def _app(root: Path) -> Any:
    settings = Settings(
        model_repository=root,
        seed_repository=False,
        api_key=bearer()["Authorization"].removeprefix("Bearer "),
        repository_poll_ms=0,
    )
    return create_app(settings)


# parametrizing needs the schema at collection; the requests go to a fresh app per operation
schema = schemathesis.openapi.from_dict(_app(Path("unused")).openapi())
CHECKS = [  # not_a_server_error is the assertion in the test: a model that does not serve is a 503
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.response_headers_conformance,
]


@pytest.fixture
def fresh_app(tmp_path: Path) -> Iterator[Any]:
    """A started app on a fresh ``mlp`` + ``digits`` repository, done loading its models.

    Fresh per operation: schemathesis ends the lifespans it started after every
    test, and the generated writes of one operation (unload, delete, model.json
    replacements) would otherwise change what the next one sees.
    """
    root = make_repository(tmp_path / "model_repository")
    models.seed_repository(root, names=["digits"])  # the schema's example model name
    app = _app(root)
    with asgi.get_client(app) as client:  # starts the app's lifespan
        deadline = time.monotonic() + 60
        while client.get("/v2/health/ready").status_code != 200:
            assert time.monotonic() < deadline, "the app did not get ready"
            time.sleep(0.05)
    yield app
    asgi.shutdown_lifespans()


@schema.parametrize()
@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_every_operation_conforms_to_the_schema(fresh_app: Any, case: Any) -> None:
    response = case.call(app=fresh_app, base_url="http://testserver", headers=bearer())
    assert response.status_code < 500 or (
        response.status_code == 503 and "is not ready" in response.json()["error"]
    ), (response.status_code, response.text[:300])
    case.validate_response(response, headers=bearer(), checks=CHECKS)


def test_the_schema_lists_the_v2_operations() -> None:
    paths = schema.raw_schema["paths"]
    assert "/v2/models/{model_name}/infer" in paths
    assert "/v2/repository/index" in paths
