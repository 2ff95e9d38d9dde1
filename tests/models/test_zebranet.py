"""``zebranet`` against torchvision's AlexNet (reproduced in torch below, with ZebraNet's names)."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
import models

torch = pytest.importorskip("torch")
nn = torch.nn


class ZebraNet(nn.Module):
    """torchvision.models.AlexNet with features/avgpool renamed convpart/avgpooling."""

    def __init__(
        self, num_classes=1000, dropout=0.5, in_channels=3, widths=(64, 192, 384, 256, 256), hidden=4096
    ):
        super().__init__()
        c1, c2, c3, c4, c5 = widths
        self.convpart = nn.Sequential(
            nn.Conv2d(in_channels, c1, kernel_size=11, stride=4, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(c1, c2, kernel_size=5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(c2, c3, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(c3, c4, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(c4, c5, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.avgpooling = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout),
            nn.Linear(c5 * 6 * 6, hidden),
            nn.ReLU(inplace=True),
            nn.Dropout(p=dropout),
            nn.Linear(hidden, hidden),
            nn.ReLU(inplace=True),
            nn.Linear(hidden, num_classes),
        )

    def forward(self, x):
        x = self.convpart(x)
        x = self.avgpooling(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


SMALL = {"widths": [8, 12, 16, 12, 10], "hidden_features": 32, "num_classes": 5, "image_size": 96}


@pytest.mark.parametrize("image_size", [96, 127])
def test_zebranet_matches_torchvision_alexnet_layout(image_size, load_torch_state):
    torch.manual_seed(0)
    reference = ZebraNet(num_classes=5, widths=(8, 12, 16, 12, 10), hidden=32).eval()
    model = models.create("zebranet", **SMALL).eval()
    load_torch_state(model, reference)
    assert [name for name, _ in model.named_modules()] == [name for name, _ in reference.named_modules()]
    x = np.random.default_rng(0).standard_normal((2, 3, image_size, image_size)).astype(np.float32)
    with mininn.no_grad():
        got = model(mininn.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, reference(torch.from_numpy(x)).detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_zebranet_default_keys_and_shapes_are_alexnets():
    with torch.device("meta"):
        reference = ZebraNet()
    model = models.create("zebranet")
    assert [(k, tuple(v.shape)) for k, v in model.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in reference.state_dict().items()
    ]
