"""``mininn.torch_alias``: code written for torch runs on mininn, and only that code sees the alias."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import mininn
from mininn.torch_alias import TorchImportError, TorchNameError, code_location, load_code, torch_module

MODEL = '''
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import nn as nn2
from torch.nn import Linear
from .layers import Scale
import helpers


class Net(nn.Module):
    def __init__(self, n=3):
        super().__init__()
        self.fc = Linear(n, n)
        self.scale = Scale(2.0)
        nn.init.zeros_(self.fc.bias)

    def forward(self, x):
        return helpers.double(self.scale(F.relu(self.fc(x)))) * math.sqrt(1.0)


SEEN = (torch, nn, nn2)
'''
LAYERS = '''
import torch


class Scale(torch.nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor
'''
HELPERS = "import torch\n\n\ndef double(x):\n    return torch.cat([x, x], dim=0)\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "layers.py").write_text(LAYERS)
    (tmp_path / "helpers.py").write_text(HELPERS)
    return tmp_path


def test_torch_in_loaded_code_is_mininn_and_siblings_import(folder: Path) -> None:
    code = load_code(folder, "model.py")
    torch_alias, nn, nn2 = code.SEEN
    assert nn.Module is mininn.nn.Module and nn2 is nn and torch_alias.float32 is mininn.float32
    net = code.Net()
    assert isinstance(net, mininn.nn.Module)
    x = mininn.tensor(np.ones((2, 3), np.float32))
    expected = np.maximum(x.numpy() @ net.fc.weight.detach().numpy().T, 0) * 2
    np.testing.assert_allclose(net(x).detach().numpy(), np.concatenate([expected, expected]), rtol=1e-6)


def test_real_torch_stays_real_before_and_after_loading(folder: Path) -> None:
    torch = pytest.importorskip("torch")
    code = load_code(folder, "model.py")
    assert sys.modules["torch"] is torch
    assert isinstance(code.Net(), mininn.nn.Module) and not isinstance(code.Net(), torch.nn.Module)
    import torch as again

    assert again is torch and torch.nn.Linear(2, 2).weight.dtype == torch.float32


def test_a_missing_name_says_it_is_not_available_in_mininn() -> None:
    nn = torch_module("torch.nn")
    with pytest.raises(TorchNameError, match=r"^torch\.nn\.NoSuchLayer is not available in mininn$"):
        nn.NoSuchLayer  # noqa: B018
    with pytest.raises(TorchImportError, match=r"^torch\.quantization is not available in mininn$"):
        torch_module("torch.quantization")


def test_missing_names_are_located_in_the_users_file(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text("import torch.nn as nn\n\nLayer = nn.NoSuchLayer\n")
    with pytest.raises(TorchNameError) as caught:
        load_code(tmp_path, "model.py")
    assert code_location(caught.value, tmp_path) == "model.py:3"
    (tmp_path / "other.py").write_text("import torch\n\n\ndef f():\n    return torch.nope\n")
    with pytest.raises(TorchNameError) as caught:
        load_code(tmp_path, "other.py").f()
    assert code_location(caught.value, tmp_path) == "other.py:5 in f"


def test_a_file_that_fails_to_import_leaves_nothing_in_sys_modules(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text("import torch\nraise RuntimeError('broken on purpose')\n")
    before = set(sys.modules)
    with pytest.raises(RuntimeError, match="broken on purpose"):
        load_code(tmp_path, "model.py")
    assert set(sys.modules) - before <= {"mininn_torch_code"}


def test_each_load_reads_the_files_again(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text("VALUE = 1\n")
    assert load_code(tmp_path, "model.py").VALUE == 1
    (tmp_path / "model.py").write_text("VALUE = 2\n")
    assert load_code(tmp_path, "model.py").VALUE == 2


def test_only_python_files_inside_the_folder_load(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("x")
    for name in ("data.txt", "../model.py", "missing.py"):
        with pytest.raises(FileNotFoundError):
            load_code(tmp_path, name)


def test_cuda_queries_answer_without_a_gpu() -> None:
    cuda = torch_module("torch").cuda
    assert cuda.is_available() in (True, False) and cuda.device_count() >= 0
