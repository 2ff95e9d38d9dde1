import torch.nn as nn


class ResidualUnit(nn.Module):
    """Two 3x3 convolutions with batch norm, added to a shortcut (a 1x1 projection when the shape changes)."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False),
            nn.BatchNorm2d(cout),
        )
        reshapes = stride != 1 or cin != cout
        self.skip = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)) \
            if reshapes else nn.Identity()

    def forward(self, x):
        return (self.body(x) + self.skip(x)).relu()
