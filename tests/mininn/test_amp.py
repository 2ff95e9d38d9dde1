"""``torch.amp``/``torch.cuda.amp`` in model files: custom Functions' decorators and disabled autocast."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mininn
from mininn.torch_alias import load_code

torch = pytest.importorskip("torch")

MODEL = '''
import torch
from torch.cuda.amp import custom_bwd as old_custom_bwd, custom_fwd as old_custom_fwd


class ScaledSwish(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x * torch.sigmoid(x) * scale

    @staticmethod
    @torch.amp.custom_bwd(device_type="cuda")
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return grad * ctx.scale * (s + x * s * (1 - s)), None


class Double(torch.autograd.Function):
    @staticmethod
    @old_custom_fwd
    def forward(ctx, x):
        return x * 2

    @staticmethod
    @old_custom_bwd
    def backward(ctx, grad):
        return grad * 2


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        with torch.autocast(device_type="cuda", enabled=False):
            h = ScaledSwish.apply(self.fc(x), 0.5)
        with torch.cuda.amp.autocast(enabled=False):
            return Double.apply(h)
'''


def _load(tmp_path: Path) -> object:
    (tmp_path / "model.py").write_text(MODEL)
    return load_code(tmp_path, "model.py")


@pytest.mark.filterwarnings("ignore:`torch.cuda.amp:FutureWarning")  # torch's deprecation of the old names
def test_decorated_custom_functions_and_disabled_autocast_equal_torch(tmp_path: Path) -> None:
    namespace: dict[str, object] = {}
    exec(compile(MODEL, "model.py", "exec"), namespace)  # noqa: S102 - the same file, on real torch
    torch.manual_seed(0)
    reference = namespace["Net"]()
    ours = _load(tmp_path).Net()
    ours.load_state_dict({k: mininn.tensor(v.detach().numpy()) for k, v in reference.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    tx, mx = torch.tensor(x, requires_grad=True), mininn.tensor(x, requires_grad=True)
    expected, got = reference(tx), ours(mx)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-6, atol=1e-7)
    expected.sum().backward()
    got.sum().backward()
    np.testing.assert_allclose(mx.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(ours.fc.weight.grad.numpy(), reference.fc.weight.grad.numpy(),
                               rtol=1e-5, atol=1e-7)


def test_autocast_on_is_refused_and_reported_off() -> None:
    assert mininn.is_autocast_enabled() is False
    with pytest.raises(NotImplementedError, match="cast the model explicitly"):
        mininn.autocast("cpu", dtype=mininn.bfloat16)
    with pytest.raises(NotImplementedError, match="autocast"):
        mininn.amp.autocast("cuda")


def test_custom_fwd_needs_a_string_device_type_as_torch() -> None:
    with pytest.raises(ValueError) as theirs:
        torch.amp.custom_fwd(device_type=0)
    with pytest.raises(ValueError) as ours:
        mininn.amp.custom_fwd(device_type=0)
    assert str(ours.value) == str(theirs.value)
