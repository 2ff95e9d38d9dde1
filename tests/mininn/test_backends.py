"""``torch.backends`` in model files: flags set at import time, read back, and availability queries."""

from __future__ import annotations

from pathlib import Path

import pytest

import mininn.backends
from mininn.torch_alias import load_code

torch = pytest.importorskip("torch")

MODEL = '''
import torch

torch.backends.cudnn.benchmark = True
torch.backends.cudnn.deterministic = True
torch.backends.cuda.matmul.allow_tf32 = False
DEVICE = "mps" if torch.backends.mps.is_available() else "cpu"
SEEN = (torch.backends.cudnn.benchmark, torch.backends.cudnn.is_available(), torch.backends.cudnn.version(),
        torch.backends.mps.is_built(), torch.backends.cuda.is_built())


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 2)

    def forward(self, x):
        with torch.backends.cudnn.flags(enabled=False):
            return self.fc(x)
'''


@pytest.fixture
def restore_flags():
    saved = (mininn.backends.cudnn.benchmark, mininn.backends.cudnn.deterministic,
             mininn.backends.cuda.matmul.allow_tf32)
    yield
    (mininn.backends.cudnn.benchmark, mininn.backends.cudnn.deterministic,
     mininn.backends.cuda.matmul.allow_tf32) = saved


def test_a_file_setting_backend_flags_loads_and_reads_them_back(tmp_path: Path, restore_flags: None) -> None:
    (tmp_path / "model.py").write_text(MODEL)
    code = load_code(tmp_path, "model.py")
    # the same answers as a CPU build of torch, but for the flag the file set
    assert code.SEEN == (True, torch.backends.cudnn.is_available(), torch.backends.cudnn.version(),
                         torch.backends.mps.is_built(), torch.backends.cuda.is_built())
    assert code.DEVICE == "cpu"
    assert mininn.backends.cudnn.deterministic is True  # set on mininn's module, as on torch's
    assert mininn.backends.cuda.matmul.allow_tf32 is False
    net = code.Net()
    assert net(mininn.ones(1, 2)).shape == (1, 2)
    assert mininn.backends.cudnn.enabled is True  # flags() restored it


def test_cudnn_flags_restores_on_error_as_torch() -> None:
    with pytest.raises(RuntimeError), mininn.backends.cudnn.flags(enabled=False, benchmark=True):
        assert mininn.backends.cudnn.benchmark is True
        raise RuntimeError("inside")
    assert (mininn.backends.cudnn.enabled, mininn.backends.cudnn.benchmark) == (True, False)


def test_sdp_kernel_switches_read_back() -> None:
    with mininn.backends.cuda.sdp_kernel(enable_flash=False):
        assert not mininn.backends.cuda.flash_sdp_enabled()
        assert mininn.backends.cuda.math_sdp_enabled()
    assert mininn.backends.cuda.flash_sdp_enabled()
