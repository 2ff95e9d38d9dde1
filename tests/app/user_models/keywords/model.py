import torch
import torch.nn as nn
import torch.nn.functional as F


class SplitMixer(nn.Module):
    """Channels split in two groups (x.split(split_size=..., dim=...)), each mixed by its own
    1x1 conv, joined again (torch.cat(tensors=..., dim=...)), with torch's keyword spellings."""

    def __init__(self, channels):
        super().__init__()
        self.half = channels // 2
        self.left = nn.Conv2d(self.half, self.half, kernel_size=1)
        self.right = nn.Conv2d(channels - self.half, channels - self.half, kernel_size=1)

    def forward(self, x):
        a, b = x.split(split_size=self.half, dim=1)
        return torch.cat(tensors=[F.gelu(input=self.left(a)), torch.flip(self.right(b), dims=(3,))], dim=1)


class KeywordNet(nn.Module):
    """An image model that calls torch by keyword, as model files copied from papers do."""

    def __init__(self, channels=6, num_classes=3):
        super().__init__()
        self.stem = nn.Conv2d(in_channels=3, out_channels=channels, kernel_size=3, padding=1)
        self.mixer = SplitMixer(channels)
        self.scale = nn.Parameter(torch.ones(size=(1, channels, 1, 1)))
        self.register_buffer("offset", torch.zeros(size=(channels,)), persistent=True)
        self.head = nn.Linear(in_features=channels * 2, out_features=num_classes)

    def forward(self, image):
        x = F.relu(self.stem(image), inplace=False)
        x = self.mixer(x) * self.scale + self.offset.view(size=(1, -1, 1, 1))
        x = F.interpolate(input=x, scale_factor=0.5, mode="bilinear", align_corners=False)
        pooled = torch.cat(tensors=(x.mean(dim=(2, 3)), torch.amax(x, dim=(2, 3))), dim=-1)
        pooled = pooled.reshape(shape=(pooled.shape[0], -1))
        gate = torch.max(torch.zeros_like(input=pooled), other=pooled.permute(dims=(0, 1)))
        return self.head(torch.where(condition=gate > 0, input=gate, other=torch.full_like(gate, 0.1)))
