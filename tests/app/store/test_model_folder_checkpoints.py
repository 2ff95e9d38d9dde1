"""``mininn-serve add-model --key/--strip-prefix``: training checkpoints and the state dicts of
``torch.compile``d and ``nn.DataParallel`` models, which get the prefix to strip in a short message."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.store.model_folder import main
from mininn.serialization import load

torch = pytest.importorskip("torch")

DEEP = '''
import torch.nn as nn


def deep(depth=40):
    return nn.Sequential(*[nn.Linear(3, 3) for _ in range(depth)])
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "deep.py").write_text(DEEP)
    return tmp_path


def _torch_model(project: Path) -> Any:
    spec = importlib.util.spec_from_file_location("deep_model", project / "deep.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    return module.deep()


def add(project: Path, weights: Any, *extra: str) -> list[str]:
    torch.save(weights, project / "deep.pt")
    return ["deep", "--code", str(project / "deep.py") + ":deep", "--weights", str(project / "deep.pt"),
            "--input", "x:FP32:-1,3", "--repository", str(project / "repo"), *extra]


def _written(project: Path) -> bool:
    return (project / "repo").exists() and bool(list((project / "repo").iterdir()))


WRAPPERS = {
    "DataParallel": (lambda model: torch.nn.DataParallel(model), "module."),
    "torch.compile": (lambda model: torch.compile(model), "_orig_mod."),
}


@pytest.mark.parametrize("wrapper", list(WRAPPERS))
def test_a_wrapped_models_state_dict_names_the_prefix_to_strip_briefly(project, capsys, wrapper) -> None:
    wrap, prefix = WRAPPERS[wrapper]
    model = _torch_model(project)
    state = wrap(model).state_dict()
    assert all(key.startswith(prefix) for key in state)  # as torch saves them
    assert main(add(project, state)) == 1
    error = capsys.readouterr().err
    assert error == (
        f"mininn-serve add-model: check: loading the state dict: the checkpoint's keys start with "
        f"'{prefix}' (80 of the model's keys are there with it), as torch.compile ('_orig_mod.') and "
        f"nn.DataParallel ('module.') save them; add --strip-prefix {prefix}\n"
    )
    assert not _written(project)
    assert main(add(project, state, "--strip-prefix", prefix)) == 0
    stored = load(project / "repo" / "deep" / "1" / "weights.safetensors")
    np.testing.assert_array_equal(stored["39.bias"].numpy(), model.state_dict()["39.bias"].numpy())


def test_a_training_checkpoint_needs_key_and_loads_with_it(project, capsys) -> None:
    model = _torch_model(project)
    checkpoint = {"model_state_dict": model.state_dict(), "optimizer": {"state": {}}, "epoch": 3}
    assert main(add(project, checkpoint)) == 1
    error = capsys.readouterr().err
    assert "--weights deep.pt is a training checkpoint ('model_state_dict', 'optimizer', 'epoch')" in error
    assert "use its state dict with --key model_state_dict" in error
    assert not _written(project)
    assert main(add(project, checkpoint, "--key", "weights")) == 1
    assert "--key weights: --weights deep.pt has no entry 'weights'" in capsys.readouterr().err
    assert main(add(project, checkpoint, "--key", "model_state_dict")) == 0
    stored = load(project / "repo" / "deep" / "1" / "weights.safetensors")
    np.testing.assert_array_equal(stored["0.weight"].numpy(), model.state_dict()["0.weight"].numpy())


def test_key_and_strip_prefix_together_read_a_wrapped_training_checkpoint(project) -> None:
    model = _torch_model(project)
    checkpoint = {"model": torch.nn.DataParallel(model).state_dict(), "epoch": 1}
    assert main(add(project, checkpoint, "--key", "model", "--strip-prefix", "module.")) == 0


def test_key_without_weights_is_refused(project, capsys) -> None:
    args = ["deep", "--code", str(project / "deep.py") + ":deep", "--input", "x:FP32:-1,3",
            "--repository", str(project / "repo"), "--strip-prefix", "module."]
    assert main(args) == 1
    assert "--key and --strip-prefix apply to --weights" in capsys.readouterr().err
    assert not _written(project)
