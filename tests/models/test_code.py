"""``models.code_servable``: a model.json ``module`` that does not name a usable class says what to fix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import models

INPUTS = [{"datatype": "FP32", "shape": [-1, 2]}]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    code = "import torch\n\n\nclass Net(torch.nn.Module):\n    pass\n\n\nVALUE = 3\n"
    (tmp_path / "model.py").write_text(code)
    return tmp_path


@pytest.mark.parametrize(
    ("module", "message"),
    [
        ("model.py:Nett", "model.py defines no class or function 'Nett'; its nn.Module classes: Net"),
        ("other.py:Net", "the model's folder has no other.py; put the file there"),
        ("model.py:VALUE", "model.py defines no class or function 'VALUE'"),
        ("model:Net", "must be '<file>.py:<name>'"),
    ],
)
def test_a_module_reference_that_does_not_build_names_the_fix(
    folder: Path, module: str, message: str
) -> None:
    with pytest.raises(models.ArchitectureError, match=re.escape(message)):
        models.code_servable(folder, models.CodeSpec(module, {}, INPUTS))


def test_bytes_inputs_are_refused_for_a_modules_forward(folder: Path) -> None:
    with pytest.raises(models.ArchitectureError, match="forward takes tensors, not BYTES"):
        spec = models.CodeSpec("model.py:Net", {}, [{"name": "text", "datatype": "BYTES", "shape": [-1]}])
        models.code_servable(folder, spec)
