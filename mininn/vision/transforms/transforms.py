"""torchvision's basic transforms on mininn: Compose, ToTensor, ConvertImageDtype, Normalize, Resize,
CenterCrop and Lambda, with torchvision's arguments, checks and reprs (the module ones are
``nn.Module``\\ s, as there)."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any

from mininn import nn
from mininn.tensor import Tensor
from mininn.vision.transforms import functional as F
from mininn.vision.transforms.functional import InterpolationMode

__all__ = ["Compose", "ToTensor", "PILToTensor", "ConvertImageDtype", "Normalize", "Resize", "CenterCrop",
           "Lambda"]


class Compose:
    """Apply ``transforms`` in order.

    Args:
        transforms: callables, each taking the previous one's output.
    """

    def __init__(self, transforms: Sequence[Callable[[Any], Any]]) -> None:
        self.transforms = transforms

    def __call__(self, img: Any) -> Any:
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        lines = "".join(f"\n    {t}" for t in self.transforms)
        return f"{self.__class__.__name__}({lines}\n)"


class ToTensor:
    """An ``(H, W[, C])`` array or PIL image as a ``(C, H, W)`` tensor; uint8 scales to [0, 1]."""

    def __call__(self, pic: Any) -> Tensor:
        return F.to_tensor(pic)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}()"


class PILToTensor:
    """A PIL image as a ``(C, H, W)`` tensor of its own dtype (no scaling)."""

    def __call__(self, pic: Any) -> Tensor:
        return F.pil_to_tensor(pic)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}()"


class ConvertImageDtype(nn.Module):
    """Convert a tensor image to ``dtype``, rescaling its values (see ``functional.convert_image_dtype``)."""

    def __init__(self, dtype: Any) -> None:
        super().__init__()
        self.dtype = dtype

    def forward(self, image: Tensor) -> Tensor:
        return F.convert_image_dtype(image, self.dtype)


class Normalize(nn.Module):
    """``(x - mean) / std`` per channel of a float tensor image.

    Args:
        mean: per-channel means.
        std: per-channel standard deviations.
        inplace: normalise the input tensor itself.
    """

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False) -> None:
        super().__init__()
        self.mean = mean
        self.std = std
        self.inplace = inplace

    def forward(self, tensor: Tensor) -> Tensor:
        return F.normalize(tensor, self.mean, self.std, self.inplace)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(mean={self.mean}, std={self.std})"


class Resize(nn.Module):
    """Resize to ``size`` (``(h, w)``, or the smaller edge's length keeping the aspect ratio).

    Args:
        size: an int or a sequence of 1 or 2 ints.
        interpolation: an :class:`InterpolationMode` or Pillow's integer constant.
        max_size: the longest the longer edge may become (with an int ``size``).
        antialias: anti-alias bilinear and bicubic downsampling of tensors.

    Raises:
        TypeError: ``size`` neither an int nor a sequence.
        ValueError: a sequence ``size`` of another length.
    """

    def __init__(self, size: int | Sequence[int], interpolation: Any = InterpolationMode.BILINEAR,
                 max_size: int | None = None, antialias: bool | None = True) -> None:
        super().__init__()
        if not isinstance(size, (int, Sequence)):
            raise TypeError(f"Size should be int or sequence. Got {type(size)}")
        if isinstance(size, Sequence) and len(size) not in (1, 2):
            raise ValueError("If size is a sequence, it should have 1 or 2 values")
        self.size = size
        self.max_size = max_size
        if isinstance(interpolation, int):
            interpolation = F._interpolation_mode(interpolation)
        self.interpolation = interpolation
        self.antialias = antialias

    def forward(self, img: Any) -> Any:
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def __repr__(self) -> str:
        detail = (f"(size={self.size}, interpolation={self.interpolation.value}, max_size={self.max_size}, "
                  f"antialias={self.antialias})")
        return f"{self.__class__.__name__}{detail}"


class CenterCrop(nn.Module):
    """Crop the centre ``size`` region (``(h, w)`` or one int), zero-padding a smaller image.

    Raises:
        ValueError: a sequence ``size`` of more than two values (torchvision's message).
    """

    def __init__(self, size: int | Sequence[int]) -> None:
        super().__init__()
        if isinstance(size, numbers.Number):
            self.size: Any = (int(size), int(size))
        elif isinstance(size, Sequence) and len(size) == 1:
            self.size = (size[0], size[0])
        elif len(size) != 2:
            raise ValueError("Please provide only two dimensions (h, w) for size.")
        else:
            self.size = size

    def forward(self, img: Any) -> Any:
        return F.center_crop(img, self.size)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(size={self.size})"


class Lambda:
    """A user function as a transform.

    Raises:
        TypeError: ``lambd`` is not callable (torchvision's message).
    """

    def __init__(self, lambd: Callable[[Any], Any]) -> None:
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {repr(type(lambd).__name__)}")
        self.lambd = lambd

    def __call__(self, img: Any) -> Any:
        return self.lambd(img)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}()"
