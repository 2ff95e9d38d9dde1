"""An image-to-image stylizer: reflection-padded convolutions, instance norm, residual blocks, resize-conv."""

import torch.nn as nn
import torch.nn.functional as F


def padded_conv(cin, cout, kernel, stride=1):
    return nn.Sequential(nn.ReflectionPad2d(kernel // 2), nn.Conv2d(cin, cout, kernel, stride))


class Residual(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.body = nn.Sequential(
            padded_conv(width, width, 3), nn.InstanceNorm2d(width, affine=True), nn.ReLU(),
            padded_conv(width, width, 3), nn.InstanceNorm2d(width, affine=True),
        )

    def forward(self, x):
        return x + self.body(x)


class Stylizer(nn.Module):
    def __init__(self, width=8, blocks=2):
        super().__init__()
        self.down = nn.Sequential(
            padded_conv(3, width, 7), nn.InstanceNorm2d(width, affine=True), nn.ReLU(),
            padded_conv(width, 2 * width, 3, stride=2), nn.InstanceNorm2d(2 * width, affine=True), nn.ReLU(),
        )
        self.blocks = nn.Sequential(*[Residual(2 * width) for _ in range(blocks)])
        self.up = nn.Sequential(
            padded_conv(2 * width, width, 3), nn.InstanceNorm2d(width, affine=True), nn.ReLU()
        )
        self.out = padded_conv(width, 3, 7)

    def forward(self, image):
        x = self.blocks(self.down(image))
        x = self.up(F.interpolate(x, scale_factor=2, mode="nearest"))
        return self.out(x)
