import torch
from torch import nn


class ImageAndTabular(nn.Module):
    """A small CNN for the image, an MLP for the tabular features, one head for both."""

    def __init__(self):
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 16)
        )
        self.mlp = nn.Sequential(nn.Linear(5, 16), nn.Tanh())
        self.head = nn.Linear(32, 3)

    def forward(self, image, features):
        joined = torch.cat([self.cnn(image), self.mlp(features)], dim=1)
        return self.head(torch.relu(joined))
