"""``resnet18`` / ``resnet34`` against torchvision's ResNet (BasicBlock reproduced in torch below)."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
import models

torch = pytest.importorskip("torch")
nn = torch.nn


# ---- torchvision/models/resnet.py (BasicBlock path), as torchvision writes it --------------------
def conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation, groups=groups,
                     bias=False, dilation=dilation)


def conv1x1(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class ResNet(nn.Module):
    def __init__(self, layers, num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(64, layers[0])
        self.layer2 = self._make_layer(128, layers[1], stride=2)
        self.layer3 = self._make_layer(256, layers[2], stride=2)
        self.layer4 = self._make_layer(512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * BasicBlock.expansion, num_classes)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * BasicBlock.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * BasicBlock.expansion, stride),
                nn.BatchNorm2d(planes * BasicBlock.expansion),
            )
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * BasicBlock.expansion
        for _ in range(1, blocks):
            layers.append(BasicBlock(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.maxpool(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.fc(x)
# --------------------------------------------------------------------------------------------------

LAYERS = {"resnet18": (2, 2, 2, 2), "resnet34": (3, 4, 6, 3)}


def randomize_batch_norms(module):
    """Trained-looking running statistics, so eval mode uses them for real."""
    generator = torch.Generator().manual_seed(0)
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.rand(n, generator=generator) * 0.2 - 0.1)
            m.running_var.copy_(torch.rand(n, generator=generator) + 0.5)
            m.weight.data.copy_(torch.rand(n, generator=generator) + 0.5)
            m.bias.data.copy_(torch.rand(n, generator=generator) * 0.2 - 0.1)
            m.num_batches_tracked.fill_(7)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet18", "resnet34"])
def test_resnet_loads_a_torchvision_state_dict_strictly_and_matches(name, load_torch_state):
    torch.manual_seed(0)
    reference = ResNet(LAYERS[name], num_classes=10)
    randomize_batch_norms(reference)
    reference.eval()
    model = models.create(name, num_classes=10).eval()
    load_torch_state(model, reference)
    assert [name for name, _ in model.named_modules()] == [name for name, _ in reference.named_modules()]
    x = np.random.default_rng(0).standard_normal((2, 3, 64, 64)).astype(np.float32)
    with mininn.no_grad():
        got = model(mininn.from_numpy(x)).numpy()
    want = reference(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_resnet18_key_names_follow_torchvision():
    keys = list(models.create("resnet18", num_classes=3).state_dict())
    assert keys[:7] == [
        "conv1.weight", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var",
        "bn1.num_batches_tracked", "layer1.0.conv1.weight",
    ]
    assert "layer2.0.downsample.0.weight" in keys and "layer2.0.downsample.1.running_var" in keys
    assert "layer1.0.downsample.0.weight" not in keys
    assert keys[-2:] == ["fc.weight", "fc.bias"]


def test_zero_init_residual_zeroes_every_blocks_second_batch_norm():
    model = models.create("resnet18", num_classes=3, zero_init_residual=True)
    weights = [v.numpy() for k, v in model.state_dict().items() if k.endswith("bn2.weight")]
    assert len(weights) == 8 and all((w == 0).all() for w in weights)


def test_resnet_servable_declares_the_configured_image_size():
    servable = models.servable("resnet18", {"num_classes": 4, "image_size": 32})
    assert servable.inputs[0].shape == (-1, 3, 32, 32)
    with mininn.no_grad():
        outputs = servable.predict(servable.example_inputs(2))
    assert outputs["logits"].shape == (2, 4) and outputs["probabilities"].shape == (2, 4)
