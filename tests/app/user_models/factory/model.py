import torch.nn as nn


def make_mlp(in_features, hidden, out_features, activation="relu"):
    """A factory, as torchvision's resnet18() is: keyword arguments in, an nn.Module out."""
    act = {"relu": nn.ReLU, "tanh": nn.Tanh, "silu": nn.SiLU}[activation]
    layers = []
    width = in_features
    for h in hidden:
        layers += [nn.Linear(width, h), act()]
        width = h
    layers.append(nn.Linear(width, out_features))
    return nn.Sequential(*layers)
