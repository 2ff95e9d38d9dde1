"""torchvision.ops.FrozenBatchNorm2d on mininn against torchvision's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _torchvision import import_torchvision

import mininn
from mininn.vision import ops

tv = import_torchvision()
torch = pytest.importorskip("torch")


def _frozen_pair(rng: np.random.Generator, c: int) -> tuple[Any, Any]:
    reference = tv.ops.FrozenBatchNorm2d(c, eps=1e-3)
    for name in ("weight", "bias", "running_mean"):
        getattr(reference, name).copy_(torch.from_numpy(rng.standard_normal(c).astype(np.float32)))
    reference.running_var.copy_(torch.from_numpy(rng.uniform(0.5, 2, c).astype(np.float32)))
    return ops.FrozenBatchNorm2d(c, eps=1e-3), reference


def test_frozen_batch_norm_equals_torchvision_and_loads_a_batch_norm_checkpoint() -> None:
    rng = np.random.default_rng(4)
    model, reference = _frozen_pair(rng, 5)
    assert list(model.state_dict()) == list(reference.state_dict())
    assert list(model.parameters()) == []
    assert repr(model) == repr(reference) == "FrozenBatchNorm2d(5, eps=0.001)"
    model.load_state_dict({k: mininn.tensor(v.numpy()) for k, v in reference.state_dict().items()})
    x = rng.standard_normal((2, 5, 3, 3)).astype(np.float32)
    np.testing.assert_allclose(model(mininn.tensor(x)).numpy(), reference(torch.from_numpy(x)).numpy(),
                               rtol=1e-5, atol=1e-6)
    batch_norm = torch.nn.BatchNorm2d(5).state_dict()  # has num_batches_tracked: dropped, as torchvision
    missing, unexpected = model.load_state_dict({k: mininn.tensor(v.numpy()) for k, v in batch_norm.items()})
    assert missing == [] and unexpected == []
    np.testing.assert_array_equal(model.running_var.numpy(), np.ones(5, np.float32))
