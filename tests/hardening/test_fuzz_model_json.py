"""Fuzzing model.json: ``PUT /v2/repository/models/{m}`` and the load route's ``config`` override.

Documents are near-valid ``model.json`` files: a small architecture (or a
made-up one), config keys of its own and others with values of every JSON
type and size (kept small enough that a build that succeeds stays cheap),
``max_batch_size``, ``device``, ``dtype`` and extra keys, or any JSON at all.

The property: 200/201 or a 4xx ``{"error": ...}``, never a 5xx; a refused
``model.json`` leaves the file on disk as it was, and the models that served
before keep serving.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _hardening_support import INFER_BODY, bearer, examples
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.timeout(300)

SMALL = st.integers(-3, 40) | st.sampled_from(
    [0, 1, 2, 3, 4, 8, 28, 2**45, 2**63, 10**30]
)  # 2**45: fails to allocate
VALUES = (
    SMALL
    | st.none()
    | st.booleans()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=10)
    | st.sampled_from(["relu", "gelu", "tanh", "sigmoid", "cpu", "cuda", "float16", "int64"])
    | st.lists(SMALL, max_size=4)
    | st.dictionaries(st.text(max_size=4), SMALL, max_size=2)
)
KEYS = st.sampled_from(
    [
        "in_features",
        "hidden_sizes",
        "out_features",
        "activation",
        "dropout",
        "in_channels",
        "image_size",
        "padding",
        "num_classes",
        "widths",
        "hidden_features",
        "x",
        "",
    ]
)
ARCHITECTURES = st.sampled_from(["mlp", "lenet5", "simple_cnn", "zebranet", "nope", "", "MLP"]) | VALUES


@st.composite
def model_documents(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.recursive(VALUES, lambda inner: st.lists(inner, max_size=3), max_leaves=8))
    architecture = draw(ARCHITECTURES)
    config: dict[str, Any] = {}
    if architecture == "mlp" and draw(st.booleans()):
        config = {"in_features": 4, "hidden_sizes": [8], "out_features": 3}
    if architecture == "zebranet":  # keep it small: its defaults are an ImageNet-sized AlexNet
        config = {"widths": [2, 2, 2, 2, 2], "hidden_features": 4, "image_size": 64, "num_classes": 3}
    config.update(draw(st.dictionaries(KEYS, VALUES, max_size=3)))
    document: dict[str, Any] = {"architecture": architecture, "config": config}
    document.update(
        draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "max_batch_size": SMALL | VALUES,
                    "device": st.sampled_from(["cpu", "cuda", "cuda:7", "tpu", ""]) | VALUES,
                    "dtype": st.sampled_from(["float32", "float64", "float16", "int64", "bfloat16"]) | VALUES,
                    "description": VALUES,
                    "extra": VALUES,
                },
            )
        )
    )
    if draw(st.integers(0, 5)) == 0:
        document["config"] = draw(VALUES)
    return document


@settings(
    max_examples=examples(80),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(document=model_documents(), target=st.sampled_from(["mlp", "fresh"]))
def test_random_model_json_is_2xx_or_4xx_and_a_refusal_changes_nothing(
    keyed_client: TestClient, module_repository: Path, document: Any, target: str
) -> None:
    path = module_repository / target / "model.json"
    before = path.read_bytes() if path.exists() else None
    response = keyed_client.put(
        f"/v2/repository/models/{target}", content=json.dumps(document), headers=bearer()
    )
    assert response.status_code in (200, 201) or 400 <= response.status_code < 500, response.text[:300]
    if response.status_code >= 400:
        assert isinstance(response.json()["error"], str)
        assert (path.read_bytes() if path.exists() else None) == before
    if target == "mlp" and response.status_code < 300:  # put the working model.json back
        restore = {
            "architecture": "mlp",
            "config": {"in_features": 4, "hidden_sizes": [8], "out_features": 3},
        }
        assert (
            keyed_client.put("/v2/repository/models/mlp", json=restore, headers=bearer()).status_code == 200
        )
    assert keyed_client.post("/v2/models/mlp/infer", json=INFER_BODY).status_code == 200


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(document=model_documents(), as_text=st.booleans())
def test_random_load_config_overrides_are_2xx_or_4xx(
    keyed_client: TestClient, document: Any, as_text: bool
) -> None:
    config = json.dumps(document) if as_text else document
    response = keyed_client.post(
        "/v2/repository/models/mlp-spare/load",
        content=json.dumps({"parameters": {"config": config}}),  # NaN too, which httpx's json= refuses
        headers=bearer(),
    )
    assert response.status_code == 200 or 400 <= response.status_code < 500, response.text[:300]
    assert keyed_client.post("/v2/models/mlp/infer", json=INFER_BODY).status_code == 200
