"""A two-level U-shaped segmenter: max-pool down, bilinear up, skip connections concatenated."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_bn_relu(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class Level(nn.Module):
    """Two convolutions at one resolution."""

    def __init__(self, cin, cout):
        super().__init__()
        self.convs = nn.Sequential(conv_bn_relu(cin, cout), conv_bn_relu(cout, cout))

    def forward(self, x):
        return self.convs(x)


class TinyUNet(nn.Module):
    def __init__(self, channels=3, classes=2, base=4):
        super().__init__()
        widths = [base, 2 * base, 4 * base]
        self.encoder = nn.ModuleList([Level(channels, widths[0]), Level(widths[0], widths[1]),
                                      Level(widths[1], widths[2])])
        self.decoder = nn.ModuleList([Level(widths[2] + widths[1], widths[1]),
                                      Level(widths[1] + widths[0], widths[0])])
        self.classify = nn.Conv2d(widths[0], classes, 1)

    def forward(self, image):
        skips = []
        x = image
        for i, level in enumerate(self.encoder):
            x = level(x if i == 0 else F.max_pool2d(x, 2))
            skips.append(x)
        skips.pop()
        for level in self.decoder:
            skip = skips.pop()
            x = F.interpolate(x, size=skip.shape[-2:], mode="bilinear", align_corners=False)
            x = level(torch.cat([skip, x], dim=1))
        return self.classify(x)
