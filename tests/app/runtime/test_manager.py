from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _app_support import MLP_CONFIG, mlp_weights, numpy_mlp, write_model

import mininn
import models
from app.errors import BadRequestError, NotFoundError, ServiceUnavailableError, UnprocessableError
from app.runtime.manager import ModelManager, ModelState
from app.runtime.metrics import Metrics
from app.settings import Settings
from app.store.repository import ModelRepository, parse_spec
from mininn import nn
from models.signature import Signature, TensorSpec


@pytest.fixture
def executor() -> Iterator[ThreadPoolExecutor]:
    pool = ThreadPoolExecutor(2)
    yield pool
    pool.shutdown()


def make_manager(root: Path, executor: ThreadPoolExecutor, **settings: Any) -> ModelManager:
    return ModelManager(
        ModelRepository(root), Settings(model_repository=root, **settings), executor, Metrics()
    )


@pytest.fixture
def manager(repository: Path, executor: ThreadPoolExecutor) -> ModelManager:
    manager = make_manager(repository, executor)
    asyncio.run(manager.load_all())
    return manager


def test_start_up_loads_every_model_and_reports_failures(manager: ModelManager) -> None:
    assert manager.ready
    assert manager.entry("mlp").state is ModelState.READY
    assert sorted(manager.entry("mlp").versions) == [1, 2]
    broken = manager.entry("broken")
    assert broken.state is ModelState.UNAVAILABLE
    assert broken.reason.startswith(
        "version 1: loading the state dict: Error(s) in loading state_dict for MLP:"
    )
    assert "size mismatch for 0.weight" in broken.reason


def test_a_loaded_version_has_its_weights_in_eval_mode(manager: ModelManager) -> None:
    version = manager.version("mlp", 1)
    assert version.module.training is False
    assert all(not m.training for m in version.module.modules())
    weights = mlp_weights(1)
    for key, value in version.module.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), weights[key])
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    out = version.runner.predict({"input": x})["output"]
    np.testing.assert_allclose(out, numpy_mlp(weights, x), rtol=1e-5, atol=1e-6)


def test_version_none_is_the_highest(manager: ModelManager) -> None:
    assert manager.version("mlp").version == 2
    assert manager.version("mlp", 1).version == 1


def test_unknown_version_is_404(manager: ModelManager) -> None:
    with pytest.raises(NotFoundError, match="model 'mlp' has no version 3; its versions are 1, 2"):
        manager.version("mlp", 3)


def test_unknown_model_is_404(manager: ModelManager) -> None:
    expected = "Request for unknown model: 'nope' is not found; available models: broken, mlp, mlp-spare"
    with pytest.raises(NotFoundError, match=expected):
        manager.version("nope")


def test_invalid_name_is_400(manager: ModelManager) -> None:
    with pytest.raises(BadRequestError, match="invalid model name '../x'"):
        manager.version("../x")


def test_failed_model_is_503_with_its_reason(manager: ModelManager) -> None:
    with pytest.raises(
        ServiceUnavailableError, match=r"model 'broken' is not ready: unavailable \(version 1: loading"
    ):
        manager.version("broken")


def test_a_model_added_after_start_up_is_known_but_not_loaded(
    manager: ModelManager, repository: Path
) -> None:
    write_model(repository, "late", {1: mlp_weights(5)})
    entry = manager.entry("late")
    assert entry.state is ModelState.UNAVAILABLE
    assert entry.reason == "not loaded; load it with POST /v2/repository/models/late/load"
    asyncio.run(manager.load("late"))
    assert manager.version("late").version == 1


def test_unload_then_load(manager: ModelManager) -> None:
    asyncio.run(manager.unload("mlp-spare"))
    with pytest.raises(
        ServiceUnavailableError, match=r"model 'mlp-spare' is not ready: unavailable \(unloaded\)"
    ):
        manager.version("mlp-spare")
    asyncio.run(manager.load("mlp-spare"))
    assert manager.entry("mlp-spare").state is ModelState.READY


def test_unload_unknown_model_is_404(manager: ModelManager) -> None:
    with pytest.raises(NotFoundError, match="Request for unknown model: 'ghost' is not found"):
        asyncio.run(manager.unload("ghost"))


def test_a_failed_reload_keeps_the_previous_versions_serving(manager: ModelManager, repository: Path) -> None:
    before = manager.version("mlp")
    (repository / "mlp" / "model.json").write_text(json.dumps({"architecture": "nope"}))
    with pytest.raises(
        UnprocessableError, match="failed to load 'mlp': version 2: building architecture 'nope'"
    ):
        asyncio.run(manager.load("mlp"))
    assert manager.entry("mlp").state is ModelState.READY
    assert manager.version("mlp") is before


def test_reload_swaps_in_new_versions(manager: ModelManager, repository: Path) -> None:
    write_model(repository, "mlp", {3: mlp_weights(9)})
    asyncio.run(manager.load("mlp"))
    assert manager.version("mlp").version == 3


def test_a_spec_override_replaces_model_json_for_this_load(manager: ModelManager) -> None:
    spec = parse_spec(json.dumps({"architecture": "mlp", "config": MLP_CONFIG}), "override")
    asyncio.run(manager.load("broken", spec))
    assert manager.entry("broken").state is ModelState.READY


def test_model_json_dtype_overrides_the_default(repository: Path, executor: ThreadPoolExecutor) -> None:
    write_model(
        repository,
        "wide",
        {1: mlp_weights(1)},
        {"architecture": "mlp", "config": MLP_CONFIG, "dtype": "float64"},
    )
    manager = make_manager(repository, executor)
    asyncio.run(manager.load("wide"))
    version = manager.version("wide")
    assert version.dtype == "float64"
    assert {p.dtype for p in version.module.parameters()} == {mininn.float64}
    x = np.ones((1, 4), np.float32)
    np.testing.assert_allclose(
        version.runner.predict({"input": x})["output"], numpy_mlp(mlp_weights(1), x), rtol=1e-6
    )


def test_settings_dtype_is_the_default(repository: Path, executor: ThreadPoolExecutor) -> None:
    manager = make_manager(repository, executor, dtype="float64")
    asyncio.run(manager.load("mlp"))
    assert {p.dtype for p in manager.version("mlp").module.parameters()} == {mininn.float64}


@pytest.mark.parametrize(
    ("spec", "files", "reason"),
    [
        (
            {"architecture": "nope"},
            True,
            "version 1: building architecture 'nope': unknown architecture 'nope'",
        ),
        (
            {"architecture": "mlp", "config": {"hiden": 3}},
            True,
            "version 1: building architecture 'mlp': unknown config key 'hiden'",
        ),
        (
            {"architecture": "mlp", "config": MLP_CONFIG, "device": "cuda:0"},
            True,
            "version 1: moving the module to cuda:0 / float32:",
        ),
        (  # refused when the version loads, not by every request once it serves
            {"architecture": "mlp", "config": MLP_CONFIG, "dynamic_batching": "yes"},
            True,
            "version 1: reading its batching keys: model.json key 'dynamic_batching' must be true, false",
        ),
    ],
)
def test_load_failures_name_the_step(
    tmp_path: Path, executor: ThreadPoolExecutor, spec: dict[str, Any], files: bool, reason: str
) -> None:
    if spec.get("device") and _has_cupy():
        pytest.skip("CuPy is installed: cuda works")
    write_model(tmp_path, "m", {1: mlp_weights(0)} if files else {}, spec)
    manager = make_manager(tmp_path, executor)
    with pytest.raises(UnprocessableError, match="failed to load 'm': " + _escape(reason)):
        asyncio.run(manager.load("m"))
    entry = manager.entry("m")
    assert entry.state is ModelState.UNAVAILABLE and entry.reason.startswith(reason)


def test_a_model_without_versions_is_waiting_not_failed(
    tmp_path: Path, executor: ThreadPoolExecutor, caplog: pytest.LogCaptureFixture
) -> None:
    write_model(tmp_path, "m", {}, {"architecture": "mlp", "config": MLP_CONFIG})
    manager = make_manager(tmp_path, executor)
    with caplog.at_level(logging.INFO, logger="app.models"):
        entry = asyncio.run(manager.load("m"))
    assert entry.state is ModelState.UNAVAILABLE
    assert entry.reason == (
        "waiting for its first version: upload the weights with PUT /v2/models/m/state_dict "
        "or put them in m/1/weights.safetensors in the repository"
    )
    assert [r.levelno for r in caplog.records if "waiting for its first version" in r.getMessage()] == [
        logging.INFO
    ]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert manager.metrics.registry.get_sample_value("mininn_model_load_failures_total", {"model": "m"}) in (
        None,
        0.0,
    )


def test_a_corrupt_checkpoint_fails_at_reading(tmp_path: Path, executor: ThreadPoolExecutor) -> None:
    write_model(tmp_path, "m", {1: mlp_weights(0)})
    (tmp_path / "m" / "1" / "weights.safetensors").write_bytes(
        b"\x10\x00\x00\x00\x00\x00\x00\x00{not a header}"
    )
    manager = make_manager(tmp_path, executor)
    with pytest.raises(UnprocessableError, match="version 1: reading 1/weights.safetensors: "):
        asyncio.run(manager.load("m"))


def test_strict_loading_refuses_missing_keys(tmp_path: Path, executor: ThreadPoolExecutor) -> None:
    weights = mlp_weights(0)
    del weights["3.bias"]
    write_model(tmp_path, "m", {1: weights})
    manager = make_manager(tmp_path, executor)
    with pytest.raises(UnprocessableError, match='Missing key\\(s\\) in state_dict: "3.bias"'):
        asyncio.run(manager.load("m"))


@dataclass(frozen=True)
class ExplodingConfig:
    width: int = 2


class Exploding(nn.Module):
    def __init__(self, config: ExplodingConfig) -> None:
        super().__init__()
        self.scale = nn.Parameter(mininn.ones(config.width))

    def forward(self, x: mininn.Tensor) -> mininn.Tensor:
        raise RuntimeError("boom in forward")


@pytest.fixture
def exploding_architecture() -> Iterator[str]:
    models.register(
        models.Architecture(
            name="test-exploding",
            config_cls=ExplodingConfig,
            build=Exploding,
            signature=lambda c: Signature(
                [TensorSpec("x", "FP32", (-1, c.width))], [TensorSpec("y", "FP32", (-1, 1))]
            ),
        ),
        replace=True,
    )
    yield "test-exploding"
    models.unregister("test-exploding")


def test_a_failing_warm_up_keeps_the_model_unavailable(
    tmp_path: Path, executor: ThreadPoolExecutor, exploding_architecture: str
) -> None:
    write_model(
        tmp_path, "m", {1: {"scale": np.ones(2, np.float32)}}, {"architecture": exploding_architecture}
    )
    manager = make_manager(tmp_path, executor)
    asyncio.run(manager.load_all())
    entry = manager.entry("m")
    assert entry.state is ModelState.UNAVAILABLE
    assert entry.reason == "version 1: warm-up forward on the example inputs (x [1, 2]): boom in forward"
    assert manager.metrics.model_load_failures.labels("m")._value.get() == 1


def test_index_lists_every_model_with_state_and_reason(manager: ModelManager) -> None:
    rows = {row["name"]: row for row in manager.index()}
    assert rows["mlp"] == {"name": "mlp", "version": "2", "state": "READY", "reason": ""}
    assert rows["broken"]["state"] == "UNAVAILABLE" and rows["broken"]["version"] == "1"
    assert [row["name"] for row in manager.index(ready_only=True)] == ["mlp", "mlp-spare"]


def test_max_batch_size_comes_from_model_json_or_settings(
    repository: Path, executor: ThreadPoolExecutor
) -> None:
    write_model(
        repository,
        "small",
        {1: mlp_weights(1)},
        {"architecture": "mlp", "config": MLP_CONFIG, "max_batch_size": 2},
    )
    manager = make_manager(repository, executor, max_batch_size=7)
    asyncio.run(manager.load_all())
    assert manager.version("small").max_batch_size == 2
    assert manager.version("mlp").max_batch_size == 7


def _has_cupy() -> bool:
    import importlib.util

    return importlib.util.find_spec("cupy") is not None


def _escape(text: str) -> str:
    import re

    return re.escape(text)
