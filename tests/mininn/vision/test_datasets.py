"""torchvision.datasets on mininn: every name imports (as in torchvision) and refuses to build."""

from __future__ import annotations

import pytest

from mininn.vision import datasets
from mininn.vision.datasets import DatasetNotAvailableError

NAMES = [name for name in datasets.__all__ if name not in ("DatasetNotAvailableError", "refused")]


def test_the_usual_dataset_names_import_from_torchvision_datasets() -> None:
    from mininn.vision.datasets import CIFAR10, CIFAR100, MNIST, FashionMNIST, ImageFolder  # noqa: F401

    assert {"MNIST", "FashionMNIST", "CIFAR10", "CIFAR100", "ImageFolder", "DatasetFolder"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_building_a_dataset_with_download_refuses_and_says_the_server_serves_models(name: str,
                                                                                    tmp_path) -> None:
    with pytest.raises(DatasetNotAvailableError) as error:
        getattr(datasets, name)(str(tmp_path), train=True, download=True)
    message = str(error.value)
    assert message.startswith(f"torchvision.datasets.{name}(..., download=True): mininn does not download")
    assert "serves models, not datasets" in message and "upload the trained state dict" in message
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_building_without_download_refuses_too_and_subclasses_are_refused() -> None:
    expected = r"^torchvision.datasets.ImageFolder\(...\): mininn does not read datasets"
    with pytest.raises(DatasetNotAvailableError, match=expected):
        datasets.ImageFolder("data/train", transform=None)

    class MyFolder(datasets.ImageFolder):
        pass

    with pytest.raises(DatasetNotAvailableError, match="MyFolder"):
        MyFolder("data")
    assert issubclass(DatasetNotAvailableError, RuntimeError)


def test_names_match_torchvisions_classes() -> None:
    from _torchvision import import_torchvision

    tv = import_torchvision()
    for name in NAMES:
        assert isinstance(getattr(tv.datasets, name), type), name
