"""An 18-layer residual network written for torch, with the state-dict keys of the zoo's ``resnet18``.

The keys (``conv1``, ``bn1``, ``layer1.0.conv1``, ``layer2.0.downsample.0``, ``fc``, ...) are the
checkpoint format both share; the code is this benchmark's own.
"""

import torch
from torch import nn


class Unit(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        changes_shape = stride != 1 or cin != cout
        self.downsample = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))
            if changes_shape else None
        )

    def forward(self, x):
        shortcut = x if self.downsample is None else self.downsample(x)
        y = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        return self.relu(y + shortcut)


class Net(nn.Module):
    def __init__(self, num_classes=1000, widths=(64, 128, 256, 512)):
        super().__init__()
        self.conv1 = nn.Conv2d(3, widths[0], 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        cin = widths[0]
        for index, cout in enumerate(widths, start=1):
            stride = 1 if index == 1 else 2
            self.add_module(f"layer{index}", nn.Sequential(Unit(cin, cout, stride), Unit(cout, cout, 1)))
            cin = cout
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, images):
        x = self.maxpool(self.relu(self.bn1(self.conv1(images))))
        for stage in (self.layer1, self.layer2, self.layer3, self.layer4):
            x = stage(x)
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18(num_classes=1000):
    return Net(num_classes=num_classes)
