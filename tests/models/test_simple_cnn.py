"""``simple_cnn``: the seeds' SimpleModel plus a linear head, against torch."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
import models
from models import ArchitectureError

torch = pytest.importorskip("torch")
F = torch.nn.functional


class SimpleModel(torch.nn.Module):
    """models/simple_cnn.py's SimpleModel (two 5x5 convolutions with ReLU) with the zoo's linear head."""

    def __init__(self, in_channels=1, image_size=28, num_classes=10):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(in_channels, 20, 5)
        self.conv2 = torch.nn.Conv2d(20, 20, 5)
        self.fc = torch.nn.Linear(20 * (image_size - 8) ** 2, num_classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        return self.fc(x.flatten(1))


@pytest.mark.parametrize(("in_channels", "image_size", "num_classes"), [(1, 28, 10), (3, 16, 4)])
def test_simple_cnn_matches_torch(in_channels, image_size, num_classes, load_torch_state):
    torch.manual_seed(0)
    reference = SimpleModel(in_channels, image_size, num_classes).eval()
    model = models.create("simple_cnn", in_channels=in_channels, image_size=image_size,
                          num_classes=num_classes).eval()
    load_torch_state(model, reference)
    x = np.random.default_rng(0).random((2, in_channels, image_size, image_size), dtype=np.float32)
    with mininn.no_grad():
        got = model(mininn.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, reference(torch.from_numpy(x)).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_simple_cnn_servable_returns_logits_and_probabilities():
    servable = models.servable("simple_cnn", {})
    assert [spec.shape for spec in servable.inputs] == [(-1, 1, 28, 28)]
    with mininn.no_grad():
        outputs = servable.predict(servable.example_inputs(3))
    assert outputs["logits"].shape == (3, 10)
    np.testing.assert_allclose(outputs["probabilities"].sum(axis=1), 1.0, rtol=1e-6)


def test_simple_cnn_rejects_images_too_small_for_two_convolutions():
    expected = "'image_size' of architecture 'simple_cnn': expected an integer greater than 8"
    with pytest.raises(ArchitectureError, match=expected):
        models.create("simple_cnn", image_size=8)
