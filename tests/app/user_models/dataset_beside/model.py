"""Forecast the next reading of a multichannel sensor from a window of past readings.

The data pipeline lives beside the model, as in many training scripts: the
server imports this file for ``WindowForecaster`` and never runs the training.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, random_split


class SensorWindows(Dataset):
    """Sliding windows over a (channels, time) signal; the target is the reading after the window."""

    def __init__(self, signal, window=16):
        self.signal = torch.as_tensor(signal, dtype=torch.float32)
        self.window = window

    def __len__(self):
        return self.signal.shape[1] - self.window

    def __getitem__(self, i):
        x = self.signal[:, i : i + self.window]  # (C, window)
        y = self.signal[:, i + self.window]  # (C,)
        return x, y


class WindowForecaster(nn.Module):
    def __init__(self, channels=3, hidden=16, pooled=4):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv1d(channels, hidden, kernel_size=3, padding=1),
            nn.GELU(),
            nn.AdaptiveAvgPool1d(pooled),
        )
        self.head = nn.Linear(hidden * pooled, channels)

    def forward(self, window):  # (B, C, T) -> (B, C)
        return self.head(self.encoder(window).flatten(1))


def make_loaders(signal, window=16, batch_size=8, seed=0):
    dataset = SensorWindows(signal, window)
    train_set, val_set = random_split(dataset, [0.8, 0.2], generator=torch.Generator().manual_seed(seed))
    train = DataLoader(train_set, batch_size=batch_size, shuffle=True, drop_last=True)
    return train, DataLoader(val_set, batch_size=batch_size)


def fit(model, signal, epochs=2, lr=1e-2):
    train, val = make_loaders(signal)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(epochs):
        model.train()
        for x, y in train:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()
    with torch.no_grad():
        return sum(nn.functional.mse_loss(model(x), y, reduction="sum").item() for x, y in val)


if __name__ == "__main__":
    t = torch.linspace(0, 20, 400)
    signal = torch.stack([torch.sin(t), torch.cos(0.5 * t), torch.sin(2 * t) * 0.5])
    net = WindowForecaster()
    print("validation loss", fit(net, signal))
    torch.save(net.state_dict(), "weights.pt")
