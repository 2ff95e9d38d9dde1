"""A fast-neural-style transformer net: reflection padding, InstanceNorm, residual blocks, upsampling."""

import torch


class ConvLayer(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride):
        super().__init__()
        self.reflection_pad = torch.nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        return self.conv2d(self.reflection_pad(x))


class ResidualBlock(torch.nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        out = self.relu(self.in1(self.conv1(x)))
        return self.in2(self.conv2(out)) + x


class UpsampleConvLayer(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
        super().__init__()
        self.upsample = upsample
        self.reflection_pad = torch.nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        if self.upsample:
            x = torch.nn.functional.interpolate(x, mode="nearest", scale_factor=self.upsample)
        return self.conv2d(self.reflection_pad(x))


class TransformerNet(torch.nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.conv1 = ConvLayer(3, width, kernel_size=9, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(width, affine=True)
        self.conv2 = ConvLayer(width, 2 * width, kernel_size=3, stride=2)
        self.in2 = torch.nn.InstanceNorm2d(2 * width, affine=True)
        self.res1 = ResidualBlock(2 * width)
        self.res2 = ResidualBlock(2 * width)
        self.deconv1 = UpsampleConvLayer(2 * width, width, kernel_size=3, stride=1, upsample=2)
        self.in3 = torch.nn.InstanceNorm2d(width, affine=True)
        self.deconv2 = UpsampleConvLayer(width, 3, kernel_size=9, stride=1)
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        y = self.relu(self.in1(self.conv1(x)))
        y = self.relu(self.in2(self.conv2(y)))
        y = self.res2(self.res1(y))
        y = self.relu(self.in3(self.deconv1(y)))
        return self.deconv2(y)
