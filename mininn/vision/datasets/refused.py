"""torchvision's dataset classes as names that import but refuse to build: mininn serves models.

Model files often define or import their training data beside the model
(``from torchvision import datasets``). Importing works, so such a file serves; building
a dataset raises :class:`DatasetNotAvailableError`, which says why: mininn downloads
nothing, and the server runs a model's forward pass on the inputs of a request, not on a
dataset. Train where torchvision is installed and upload the state dict.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DatasetNotAvailableError",
    "VisionDataset",
    "DatasetFolder",
    "ImageFolder",
    "MNIST",
    "FashionMNIST",
    "KMNIST",
    "EMNIST",
    "QMNIST",
    "CIFAR10",
    "CIFAR100",
    "SVHN",
    "STL10",
    "CelebA",
    "ImageNet",
    "CocoDetection",
    "CocoCaptions",
    "VOCDetection",
    "VOCSegmentation",
    "Caltech101",
    "Food101",
    "OxfordIIITPet",
    "Flowers102",
    "FakeData",
]


class DatasetNotAvailableError(RuntimeError):
    """A torchvision dataset was built in code that runs on mininn."""

    def __init__(self, name: str, download: bool) -> None:
        reason = ("mininn does not download datasets" if download
                  else "mininn does not read datasets")
        super().__init__(
            f"torchvision.datasets.{name}(...{', download=True' if download else ''}): {reason}. The "
            "server serves models, not datasets: it runs the model on each request's inputs. Keep dataset "
            "code out of the model's construction (e.g. under `if __name__ == '__main__':`), train where "
            "torchvision is installed, and upload the trained state dict."
        )
        self.name = name


class VisionDataset:
    """torchvision's dataset base: constructing any subclass raises :class:`DatasetNotAvailableError`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise DatasetNotAvailableError(type(self).__name__, bool(kwargs.get("download", False)))


class DatasetFolder(VisionDataset):
    """torchvision.datasets.DatasetFolder (refuses to build)."""


class ImageFolder(DatasetFolder):
    """torchvision.datasets.ImageFolder (refuses to build)."""


class MNIST(VisionDataset):
    """torchvision.datasets.MNIST (refuses to build)."""


class FashionMNIST(MNIST):
    """torchvision.datasets.FashionMNIST (refuses to build)."""


class KMNIST(MNIST):
    """torchvision.datasets.KMNIST (refuses to build)."""


class EMNIST(MNIST):
    """torchvision.datasets.EMNIST (refuses to build)."""


class QMNIST(MNIST):
    """torchvision.datasets.QMNIST (refuses to build)."""


class CIFAR10(VisionDataset):
    """torchvision.datasets.CIFAR10 (refuses to build)."""


class CIFAR100(CIFAR10):
    """torchvision.datasets.CIFAR100 (refuses to build)."""


class SVHN(VisionDataset):
    """torchvision.datasets.SVHN (refuses to build)."""


class STL10(VisionDataset):
    """torchvision.datasets.STL10 (refuses to build)."""


class CelebA(VisionDataset):
    """torchvision.datasets.CelebA (refuses to build)."""


class ImageNet(ImageFolder):
    """torchvision.datasets.ImageNet (refuses to build)."""


class CocoDetection(VisionDataset):
    """torchvision.datasets.CocoDetection (refuses to build)."""


class CocoCaptions(CocoDetection):
    """torchvision.datasets.CocoCaptions (refuses to build)."""


class VOCDetection(VisionDataset):
    """torchvision.datasets.VOCDetection (refuses to build)."""


class VOCSegmentation(VisionDataset):
    """torchvision.datasets.VOCSegmentation (refuses to build)."""


class Caltech101(VisionDataset):
    """torchvision.datasets.Caltech101 (refuses to build)."""


class Food101(VisionDataset):
    """torchvision.datasets.Food101 (refuses to build)."""


class OxfordIIITPet(VisionDataset):
    """torchvision.datasets.OxfordIIITPet (refuses to build)."""


class Flowers102(VisionDataset):
    """torchvision.datasets.Flowers102 (refuses to build)."""


class FakeData(VisionDataset):
    """torchvision.datasets.FakeData (refuses to build)."""
