"""``lenet5`` against PyTorch's tutorial LeNet-5 (reproduced in torch below)."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
import models
from models import ArchitectureError

torch = pytest.importorskip("torch")
F = torch.nn.functional


class Net(torch.nn.Module):
    """The "Neural Networks" tutorial's LeNet-5, with conv1 padding and activation as options."""

    def __init__(self, in_channels=1, padding=2, num_classes=10, side=5, act=F.relu):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(in_channels, 6, 5, padding=padding)
        self.conv2 = torch.nn.Conv2d(6, 16, 5)
        self.fc1 = torch.nn.Linear(16 * side * side, 120)
        self.fc2 = torch.nn.Linear(120, 84)
        self.fc3 = torch.nn.Linear(84, num_classes)
        self.act = act

    def forward(self, x):
        x = F.max_pool2d(self.act(self.conv1(x)), 2)
        x = F.max_pool2d(self.act(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = self.act(self.fc1(x))
        x = self.act(self.fc2(x))
        return self.fc3(x)


@pytest.mark.parametrize(
    ("config", "side", "act"),
    [
        ({}, 5, F.relu),
        ({"image_size": 32, "padding": 0, "activation": "tanh", "num_classes": 7}, 5, torch.tanh),
        ({"image_size": 40, "padding": 0, "in_channels": 3}, 7, F.relu),
    ],
)
def test_lenet5_matches_the_torch_tutorial_net(config, side, act, load_torch_state):
    torch.manual_seed(0)
    full = models.get_architecture("lenet5").make_config(config)
    reference = Net(full.in_channels, full.padding, full.num_classes, side, act).eval()
    model = models.create("lenet5", **config).eval()
    load_torch_state(model, reference)
    shape = (3, full.in_channels, full.image_size, full.image_size)
    x = np.random.default_rng(0).random(shape, dtype=np.float32)
    with mininn.no_grad():
        got = model(mininn.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, reference(torch.from_numpy(x)).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_lenet5_rejects_an_image_too_small_naming_the_minimum():
    with pytest.raises(ArchitectureError) as info:
        models.create("lenet5", image_size=11)
    assert str(info.value).startswith(
        "invalid value 11 for config key 'image_size' of architecture 'lenet5': "
        "expected an integer of at least 12 with padding=2; accepted keys: "
    )
    models.create("lenet5", image_size=12)
