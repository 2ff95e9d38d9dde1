"""Model files that build torch.distributions in ``forward`` run unchanged on mininn: the same file
imported with real torch and through ``load_code`` gives equal outputs and parameter gradients."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mininn
from mininn.torch_alias import load_code

torch = pytest.importorskip("torch")

FOLDER = Path(__file__).parent / "models"
FILE = "probabilistic_heads.py"
_RNG = np.random.default_rng(0)
X = _RNG.uniform(0, 1, (5, 6)).astype(np.float32)


def _torch_module() -> Any:
    spec = importlib.util.spec_from_file_location("torch_probabilistic_heads", FOLDER / FILE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _simplex(rows: int, k: int) -> np.ndarray:
    w = _RNG.uniform(0.1, 1.0, (rows, k)).astype(np.float32)
    return w / w.sum(-1, keepdims=True)


CASES = {
    "VAE": [X, _RNG.standard_normal((5, 3)).astype(np.float32)],
    "MDN": [X, _RNG.standard_normal(5).astype(np.float32)],
    "Policy": [X, _RNG.uniform(0.05, 0.95, 5).astype(np.float32), _RNG.uniform(0.1, 3, 5).astype(np.float32),
               _simplex(5, 3)],
    "GaussianHead": [X, _RNG.standard_normal((5, 3)).astype(np.float32)],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_model_file_outputs_and_gradients_equal_torchs(name):
    torch.manual_seed(0)
    reference = getattr(_torch_module(), name)()
    ours = getattr(load_code(FOLDER, FILE), name)()
    ours.load_state_dict({k: mininn.tensor(v.detach().numpy()) for k, v in reference.state_dict().items()})
    want = reference(*[torch.tensor(a) for a in CASES[name]])
    got = ours(*[mininn.tensor(a) for a in CASES[name]])
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=2e-5, atol=2e-5)
    sum(w.sum() for w in want).backward()
    sum(g.sum() for g in got).backward()
    grads = dict(ours.named_parameters())
    for key, param in reference.named_parameters():
        np.testing.assert_allclose(grads[key].grad.numpy(), param.grad.numpy(), rtol=1e-4, atol=1e-4,
                                   err_msg=key)


def test_torch_distributions_resolves_without_its_own_import(tmp_path):
    """``import torch``, then ``torch.distributions.X``: the alias imports the package on first use."""
    code = "import torch\nDIST = torch.distributions.Normal(torch.zeros(2), 1.0)\n"
    (tmp_path / "model.py").write_text(code)
    script = ("import sys; from mininn.torch_alias import load_code; "
              "m = load_code(sys.argv[1], 'model.py'); print(type(m.DIST).__module__)")
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "mininn.distributions.normal"
