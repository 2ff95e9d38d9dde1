"""Model files written for torch (``tests/mininn/torch_models``) run unchanged on mininn.

Each file is imported twice: with real torch, and through :func:`mininn.torch_alias.load_code`,
which answers its ``import torch`` with mininn. The torch model's state dict is loaded
into the mininn one and both run on the same input, in eval and (for the LSTM) on the
same h0/c0; outputs must agree to float32 tolerance.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mininn
from mininn.torch_alias import load_code

torch = pytest.importorskip("torch")

FILES = Path(__file__).parent / "torch_models"
TOL = dict(rtol=1e-4, atol=1e-5)


def _torch_module(filename: str) -> Any:
    name = f"torch_model_{Path(filename).stem}"
    spec = importlib.util.spec_from_file_location(name, FILES / filename)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _numpy(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_numpy(v) for v in value]
    return value.detach().numpy()


def _twins(filename: str, cls: str, **init: Any) -> tuple[Any, Any]:
    torch.manual_seed(0)
    reference = getattr(_torch_module(filename), cls)(**init).eval()
    ours = getattr(load_code(FILES, filename), cls)(**init).eval()
    state = {k: mininn.tensor(v.detach().numpy()) for k, v in reference.state_dict().items()}
    ours.load_state_dict(state)
    return reference, ours


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


CASES: dict[str, tuple[str, str, dict[str, Any], Callable[[np.random.Generator], list[np.ndarray]]]] = {
    "lstm language model, tied weights": (
        "lstm_lm.py", "CharLSTM", {}, lambda rng: [rng.integers(0, 40, (3, 7))],
    ),
    "unet, bilinear upsampling": (
        "unet.py", "TinyUNet", {}, lambda rng: [rng.standard_normal((2, 3, 20, 22)).astype(np.float32)],
    ),
    "super-resolution, pixel shuffle": (
        "super_resolution.py", "PixelShuffleUpscaler", {},
        lambda rng: [rng.standard_normal((2, 1, 12, 12)).astype(np.float32)],
    ),
    "style transfer, instance norm and reflection padding": (
        "style_transfer.py", "Stylizer", {},
        lambda rng: [rng.standard_normal((1, 3, 24, 24)).astype(np.float32)],
    ),
    "llama block, rms norm and complex rotary embeddings": (
        "llama_block.py", "RotaryBlock", {},
        lambda rng: [rng.standard_normal((2, 6, 16)).astype(np.float32)],
    ),
    "encoder-decoder nn.Transformer": (
        "seq2seq_transformer.py", "Translator", {},
        lambda rng: [np.array([[3, 4, 5, 0], [6, 7, 0, 0]]), np.array([[1, 2, 8], [9, 2, 0]])],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_torch_model_file_runs_unchanged_and_matches_torch(case: str) -> None:
    filename, cls, init, inputs = CASES[case]
    reference, ours = _twins(filename, cls, **init)
    arrays = inputs(_rng())
    with torch.no_grad():
        expected = reference(*(torch.from_numpy(a) for a in arrays))
    with mininn.no_grad():
        got = ours(*(mininn.tensor(a) for a in arrays))
    expected, got = _numpy(expected), _numpy(got)
    flat_expected = expected if isinstance(expected, list) else [expected]
    flat_got = got if isinstance(got, list) else [got]
    assert len(flat_got) == len(flat_expected)
    for e, g in zip(_flatten(flat_expected), _flatten(flat_got)):
        np.testing.assert_allclose(g, e, **TOL)


def _flatten(values: list[Any]) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    for v in values:
        out += _flatten(v) if isinstance(v, list) else [v]
    return out


def test_the_lstm_model_keeps_its_tied_weight_shared() -> None:
    _, ours = _twins("lstm_lm.py", "CharLSTM")
    assert ours.head.weight is ours.embed.weight
    assert [k for k in ours.state_dict() if k.endswith("weight_ih_l1")] == ["lstm.weight_ih_l1"]
