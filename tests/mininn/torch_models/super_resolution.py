"""An image upscaler: features at low resolution, then sub-pixel convolution (PixelShuffle)."""

from torch import nn


class PixelShuffleUpscaler(nn.Module):
    def __init__(self, factor=3, channels=1, features=12):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(channels, features, 5, padding=2), nn.PReLU(features),
            nn.Conv2d(features, features, 3, padding=1), nn.PReLU(features),
        )
        self.to_subpixels = nn.Conv2d(features, channels * factor * factor, 3, padding=1)
        self.shuffle = nn.PixelShuffle(factor)
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                nn.init.zeros_(module.bias)

    def forward(self, low_res):
        return self.shuffle(self.to_subpixels(self.features(low_res)))
