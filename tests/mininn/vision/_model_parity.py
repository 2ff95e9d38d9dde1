"""Shared checks of mininn.vision models against real torchvision models.

``cheap_init`` builds mininn models without drawing their random weights (the largest
builders hold 600M parameters: their untouched ``np.empty`` pages cost neither time nor
memory), for comparisons of structure. ``torchvision_on_meta`` builds torchvision's
counterpart on the meta device. ``assert_same_outputs`` loads a torchvision model's
(perturbed) state dict into the mininn model and compares eval-mode outputs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import mininn
import mininn.nn.init as mininn_init


@contextlib.contextmanager
def cheap_init(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every in-place ``mininn.nn.init`` function leaves its tensor as it is, within the block."""
    with monkeypatch.context() as patch:
        for name in mininn_init.__all__:
            if name.endswith("_"):
                patch.setattr(mininn_init, name, lambda tensor, *args, **kwargs: tensor)
        yield


def torchvision_on_meta(torch: Any, builder: Callable[..., Any], **kwargs: Any) -> Any:
    """``builder(**kwargs)`` on the meta device (RegNet's widths are computed on cpu, as they must be)."""
    from torchvision.models import regnet

    original = regnet.BlockParams.__dict__["from_init_params"]

    def on_cpu(cls: Any, *args: Any, **kw: Any) -> Any:
        with torch.device("cpu"):
            return original.__func__(cls, *args, **kw)

    regnet.BlockParams.from_init_params = classmethod(on_cpu)
    try:
        with torch.device("meta"):
            return builder(**kwargs)
    finally:
        regnet.BlockParams.from_init_params = original


def structure(state_dict: dict[str, Any]) -> list[tuple[str, tuple[int, ...], str]]:
    """``(key, shape, dtype name)`` of every entry, in order."""
    return [
        (key, tuple(value.shape), str(value.dtype).rsplit(".", 1)[-1]) for key, value in state_dict.items()
    ]


def perturbed_state(torch_model: Any, seed: int = 0) -> dict[str, np.ndarray]:
    """The model's state dict with every float entry moved off its init (zeros, ones, 1e-6 scales).

    Running variances stay positive; integer buffers (indices, batch counters) are kept.
    """
    rng = np.random.default_rng(seed)
    state: dict[str, np.ndarray] = {}
    for key, value in torch_model.state_dict().items():
        array = value.detach().numpy().copy()
        if array.dtype.kind == "f":
            if key.endswith("running_var"):
                array = rng.uniform(0.5, 1.5, array.shape)
            elif key.endswith("layer_scale"):
                array = rng.uniform(0.2, 0.6, array.shape)
            else:
                scale = max(float(array.std()), 0.02) if array.size > 1 else 0.02
                array = array + 0.5 * scale * rng.standard_normal(array.shape)
            array = array.astype(np.float32)
        state[key] = array
    return state


def assert_same_outputs(
    torch: Any,
    torch_model: Any,
    model: mininn.nn.Module,
    shape: tuple[int, ...],
    seed: int = 0,
    rtol: float = 1e-4,
) -> None:
    """Both models, in eval mode on the same perturbed weights, map one random input to the same output."""
    state = perturbed_state(torch_model, seed)
    torch_model.load_state_dict({key: torch.from_numpy(value) for key, value in state.items()})
    model.load_state_dict({key: mininn.from_numpy(value) for key, value in state.items()})
    torch_model.eval()
    model.eval()
    x = np.random.default_rng(seed + 1).standard_normal(shape).astype(np.float32)
    with torch.no_grad():
        expected = torch_model(torch.from_numpy(x)).numpy()
    with mininn.no_grad():
        got = model(mininn.from_numpy(x)).numpy()
    assert got.shape == expected.shape
    assert np.abs(expected).max() > 1e-3, "outputs too small to compare: the perturbation did not reach them"
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol * np.abs(expected).max())


def assert_same_gradients(
    torch: Any,
    torch_model: Any,
    model: mininn.nn.Module,
    shape: tuple[int, ...],
    seed: int = 0,
    rtol: float = 1e-4,
) -> None:
    """In training mode on the same perturbed weights, ``sum(output**2)`` gives both the same parameter grads.

    Dropout and stochastic depth must be off (p=0) in both models: their masks are random. Use smooth
    activations: at a kink of ReLU-like ones a float32 rounding difference flips a gradient.
    """
    state = perturbed_state(torch_model, seed)
    torch_model.load_state_dict({key: torch.from_numpy(value) for key, value in state.items()})
    model.load_state_dict({key: mininn.from_numpy(value.copy()) for key, value in state.items()})
    torch_model.train()
    model.train()
    x = np.random.default_rng(seed + 1).standard_normal(shape).astype(np.float32)
    (torch_model(torch.from_numpy(x)) ** 2).sum().backward()
    (model(mininn.from_numpy(x)) ** 2).sum().backward()
    theirs = dict(torch_model.named_parameters())
    ours = dict(model.named_parameters())
    assert list(ours) == list(theirs)
    # biases that a training-mode norm follows get gradients of rounding size: compare on the global scale
    scale = max(float(np.abs(p.grad.numpy()).max()) for p in theirs.values())
    for name, parameter in ours.items():
        expected = theirs[name].grad.numpy()
        np.testing.assert_allclose(
            parameter.grad.numpy(), expected, rtol=rtol, atol=rtol * scale, err_msg=name
        )
