"""torchvision's common training augmentations on mininn: flips, random crops, padding, grayscale, colour
jitter, blur, random erasing, and the random containers (RandomApply, RandomChoice, RandomOrder).

Model files often build their training pipeline at the top of the file; these build
with torchvision's arguments, checks and reprs, and run on tensor images. Random draws
come from mininn's generator (``mininn.manual_seed``), and ``random`` for RandomChoice and
RandomOrder, as in torchvision.
"""

from __future__ import annotations

import math
import numbers
import random
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import mininn
from mininn import nn
from mininn.vision.transforms import functional as F
from mininn.vision.transforms.functional import InterpolationMode

__all__ = [
    "RandomHorizontalFlip",
    "RandomVerticalFlip",
    "RandomCrop",
    "RandomResizedCrop",
    "Pad",
    "Grayscale",
    "ColorJitter",
    "RandomGrayscale",
    "GaussianBlur",
    "RandomErasing",
    "RandomApply",
    "RandomChoice",
    "RandomOrder",
]

Transform = Callable[[Any], Any]


def _rand() -> float:
    return float(mininn.rand(1).item())


def _randint(low: int, high: int) -> int:
    return int(mininn.randint(low, high, (1,)).item())


def _size_pair(size: int | Sequence[int]) -> tuple[int, int]:
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, Sequence) and len(size) == 1:
        return size[0], size[0]
    if len(size) != 2:
        raise ValueError("Please provide only two dimensions (h, w) for size.")
    return size[0], size[1]


class _RandomFlip(nn.Module):
    """Apply :attr:`flip` with probability ``p``."""

    flip: Any

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        self.p = p

    def forward(self, img: Any) -> Any:
        return type(self).flip(img) if _rand() < self.p else img

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p})"


class RandomHorizontalFlip(_RandomFlip):
    """Mirror left to right with probability ``p``."""

    flip = staticmethod(F.hflip)


class RandomVerticalFlip(_RandomFlip):
    """Mirror top to bottom with probability ``p``."""

    flip = staticmethod(F.vflip)


class RandomCrop(nn.Module):
    """A ``size`` crop at a random place, after optional padding (see :func:`functional.pad`)."""

    @staticmethod
    def get_params(img: Any, output_size: tuple[int, int]) -> tuple[int, int, int, int]:
        """``(top, left, height, width)`` of a random crop of ``output_size``.

        Raises:
            ValueError: the crop is larger than the image (torchvision's message).
        """
        _, h, w = F.get_dimensions(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size {(h, w)}")
        if w == tw and h == th:
            return 0, 0, h, w
        return _randint(0, h - th + 1), _randint(0, w - tw + 1), th, tw

    def __init__(self, size: int | Sequence[int], padding: Any = None, pad_if_needed: bool = False,
                 fill: float = 0, padding_mode: str = "constant") -> None:
        super().__init__()
        self.size = tuple(_size_pair(size))
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self.padding_mode = padding_mode

    def forward(self, img: Any) -> Any:
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        _, height, width = F.get_dimensions(img)
        if self.pad_if_needed and width < self.size[1]:
            img = F.pad(img, [self.size[1] - width, 0], self.fill, self.padding_mode)
        if self.pad_if_needed and height < self.size[0]:
            img = F.pad(img, [0, self.size[0] - height], self.fill, self.padding_mode)
        i, j, h, w = self.get_params(img, self.size)
        return F.crop(img, i, j, h, w)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(size={self.size}, padding={self.padding})"


class RandomResizedCrop(nn.Module):
    """A crop of random area (``scale``) and aspect ratio (``ratio``), resized to ``size``.

    Raises:
        TypeError: ``scale`` or ``ratio`` is not a sequence (torchvision's messages).
    """

    def __init__(self, size: int | Sequence[int], scale: Sequence[float] = (0.08, 1.0),
                 ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
                 interpolation: Any = InterpolationMode.BILINEAR, antialias: bool | None = True) -> None:
        super().__init__()
        self.size = _size_pair(size)
        if not isinstance(scale, Sequence):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, Sequence):
            raise TypeError("Ratio should be a sequence")
        if (scale[0] > scale[1]) or (ratio[0] > ratio[1]):
            warnings.warn("Scale and ratio should be of kind (min, max)", stacklevel=2)
        if isinstance(interpolation, int):
            interpolation = F._interpolation_mode(interpolation)
        self.interpolation = interpolation
        self.antialias = antialias
        self.scale = scale
        self.ratio = ratio

    @staticmethod
    def get_params(img: Any, scale: Sequence[float], ratio: Sequence[float]) -> tuple[int, int, int, int]:
        """``(top, left, height, width)``: ten tries at a random area and aspect, else a central crop."""
        _, height, width = F.get_dimensions(img)
        area = height * width
        log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
        for _ in range(10):
            target_area = area * (scale[0] + (scale[1] - scale[0]) * _rand())
            aspect_ratio = math.exp(log_ratio[0] + (log_ratio[1] - log_ratio[0]) * _rand())
            w = int(round(math.sqrt(target_area * aspect_ratio)))
            h = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < w <= width and 0 < h <= height:
                return _randint(0, height - h + 1), _randint(0, width - w + 1), h, w
        in_ratio = float(width) / float(height)
        if in_ratio < min(ratio):
            w, h = width, int(round(width / min(ratio)))
        elif in_ratio > max(ratio):
            h, w = height, int(round(height * max(ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def forward(self, img: Any) -> Any:
        i, j, h, w = self.get_params(img, self.scale, self.ratio)
        return F.resized_crop(img, i, j, h, w, list(self.size), self.interpolation, antialias=self.antialias)

    def __repr__(self) -> str:
        scale = tuple(round(s, 4) for s in self.scale)
        ratio = tuple(round(r, 4) for r in self.ratio)
        return (f"{self.__class__.__name__}(size={self.size}, scale={scale}, ratio={ratio}, "
                f"interpolation={self.interpolation.value}, antialias={self.antialias})")


class Pad(nn.Module):
    """Pad every side (see :func:`functional.pad`).

    Raises:
        TypeError: a bad ``padding`` or ``fill``.
        ValueError: an unknown ``padding_mode`` or a ``padding`` of another length.
    """

    def __init__(self, padding: int | Sequence[int], fill: float = 0, padding_mode: str = "constant") -> None:
        super().__init__()
        if not isinstance(padding, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate padding arg")
        if not isinstance(fill, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate fill arg")
        if padding_mode not in ["constant", "edge", "reflect", "symmetric"]:
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        if isinstance(padding, Sequence) and len(padding) not in [1, 2, 4]:
            raise ValueError(
                f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple")
        self.padding = padding
        self.fill = fill
        self.padding_mode = padding_mode

    def forward(self, img: Any) -> Any:
        return F.pad(img, self.padding, self.fill, self.padding_mode)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(padding={self.padding}, fill={self.fill}, "
                f"padding_mode={self.padding_mode})")


class Grayscale(nn.Module):
    """Luma of an RGB tensor image, as 1 or 3 channels."""

    def __init__(self, num_output_channels: int = 1) -> None:
        super().__init__()
        self.num_output_channels = num_output_channels

    def forward(self, img: Any) -> Any:
        return F.rgb_to_grayscale(img, num_output_channels=self.num_output_channels)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(num_output_channels={self.num_output_channels})"


class ColorJitter(nn.Module):
    """Random brightness, contrast, saturation and hue changes, applied in a random order.

    Each argument is a number ``x`` (a factor drawn from ``[max(0, 1 - x), 1 + x]``; for hue
    ``[-x, x]``) or a ``(min, max)`` pair.

    Raises:
        ValueError: a negative number, or a range outside its bounds (torchvision's messages).
        TypeError: an argument that is neither a number nor a pair.
    """

    def __init__(self, brightness: Any = 0, contrast: Any = 0, saturation: Any = 0, hue: Any = 0) -> None:
        super().__init__()
        self.brightness = self._check_input(brightness, "brightness")
        self.contrast = self._check_input(contrast, "contrast")
        self.saturation = self._check_input(saturation, "saturation")
        self.hue = self._check_input(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    @staticmethod
    def _check_input(value: Any, name: str, center: float = 1, bound: tuple[float, float] = (0, float("inf")),
                     clip_first_on_zero: bool = True) -> tuple[float, float] | None:
        if isinstance(value, numbers.Number):
            if value < 0:
                raise ValueError(f"If {name} is a single number, it must be non negative.")
            pair = [center - float(value), center + float(value)]
            if clip_first_on_zero:
                pair[0] = max(pair[0], 0.0)
        elif isinstance(value, (tuple, list)) and len(value) == 2:
            pair = [float(value[0]), float(value[1])]
        else:
            raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
        if not bound[0] <= pair[0] <= pair[1] <= bound[1]:
            raise ValueError(f"{name} values should be between {bound}, but got {pair}.")
        return None if pair[0] == pair[1] == center else (pair[0], pair[1])

    @staticmethod
    def get_params(brightness: Sequence[float] | None, contrast: Sequence[float] | None,
                   saturation: Sequence[float] | None, hue: Sequence[float] | None) -> tuple[Any, ...]:
        """A random order of the four adjustments and a factor for each that is on (None for the others)."""
        order = mininn.randperm(4)

        def draw(bounds: Sequence[float] | None) -> float | None:
            return None if bounds is None else bounds[0] + (bounds[1] - bounds[0]) * _rand()

        return order, draw(brightness), draw(contrast), draw(saturation), draw(hue)

    def forward(self, img: Any) -> Any:
        order, *factors = self.get_params(self.brightness, self.contrast, self.saturation, self.hue)
        adjust = (F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue)
        for index in order.tolist():
            if factors[index] is not None:
                img = adjust[index](img, factors[index])
        return img

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(brightness={self.brightness}, contrast={self.contrast}, "
                f"saturation={self.saturation}, hue={self.hue})")


class RandomGrayscale(nn.Module):
    """Grayscale (keeping the channel count) with probability ``p``."""

    def __init__(self, p: float = 0.1) -> None:
        super().__init__()
        self.p = p

    def forward(self, img: Any) -> Any:
        channels, _, _ = F.get_dimensions(img)
        return F.rgb_to_grayscale(img, num_output_channels=channels) if _rand() < self.p else img

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p})"


class GaussianBlur(nn.Module):
    """Gaussian blur with a sigma drawn from ``sigma`` (a number, or a ``(min, max)`` range).

    Raises:
        ValueError: an even or non-positive kernel size, or a bad sigma (torchvision's messages).
    """

    def __init__(self, kernel_size: int | Sequence[int], sigma: Any = (0.1, 2.0)) -> None:
        super().__init__()
        if isinstance(kernel_size, numbers.Number):
            self.kernel_size: Any = (int(kernel_size), int(kernel_size))
        elif isinstance(kernel_size, Sequence) and len(kernel_size) == 1:
            self.kernel_size = (kernel_size[0], kernel_size[0])
        elif len(kernel_size) != 2:
            raise ValueError("Kernel size should be a tuple/list of two integers")
        else:
            self.kernel_size = kernel_size
        for ks in self.kernel_size:
            if ks <= 0 or ks % 2 == 0:
                raise ValueError("Kernel size value should be an odd and positive number.")
        if isinstance(sigma, numbers.Number):
            if sigma <= 0:
                raise ValueError("If sigma is a single number, it must be positive.")
            sigma = (sigma, sigma)
        elif isinstance(sigma, Sequence) and len(sigma) == 2:
            if not 0.0 < sigma[0] <= sigma[1]:
                raise ValueError("sigma values should be positive and of the form (min, max).")
        else:
            raise ValueError("sigma should be a single number or a list/tuple with length 2.")
        self.sigma = sigma

    @staticmethod
    def get_params(sigma_min: float, sigma_max: float) -> float:
        """A sigma drawn uniformly from ``[sigma_min, sigma_max]``."""
        return sigma_min + (sigma_max - sigma_min) * _rand()

    def forward(self, img: Any) -> Any:
        sigma = self.get_params(self.sigma[0], self.sigma[1])
        return F.gaussian_blur(img, list(self.kernel_size), [sigma, sigma])

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(kernel_size={self.kernel_size}, sigma={self.sigma})"


class RandomErasing(nn.Module):
    """With probability ``p``, set a random rectangle (area ``scale``, aspect ``ratio``) to ``value``.

    ``value`` is a number, one per channel, or ``"random"`` (normal noise).

    Raises:
        TypeError, ValueError: arguments torchvision refuses (its messages).
    """

    def __init__(self, p: float = 0.5, scale: Sequence[float] = (0.02, 0.33),
                 ratio: Sequence[float] = (0.3, 3.3), value: Any = 0, inplace: bool = False) -> None:
        super().__init__()
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("Argument value should be either a number or str or a sequence")
        if isinstance(value, str) and value != "random":
            raise ValueError("If value is str, it should be 'random'")
        if not isinstance(scale, Sequence):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, Sequence):
            raise TypeError("Ratio should be a sequence")
        if (scale[0] > scale[1]) or (ratio[0] > ratio[1]):
            warnings.warn("Scale and ratio should be of kind (min, max)", stacklevel=2)
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError("Scale should be between 0 and 1")
        if p < 0 or p > 1:
            raise ValueError("Random erasing probability should be between 0 and 1")
        self.p = p
        self.scale = scale
        self.ratio = ratio
        self.value = value
        self.inplace = inplace

    @staticmethod
    def get_params(img: Any, scale: Sequence[float], ratio: Sequence[float],
                   value: list[float] | None = None) -> tuple[int, int, int, int, Any]:
        """``(top, left, height, width, values)`` of a random rectangle; the whole image if ten tries fail."""
        img_c, img_h, img_w = img.shape[-3], img.shape[-2], img.shape[-1]
        area = img_h * img_w
        log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
        for _ in range(10):
            erase_area = area * (scale[0] + (scale[1] - scale[0]) * _rand())
            aspect_ratio = math.exp(log_ratio[0] + (log_ratio[1] - log_ratio[0]) * _rand())
            h = int(round(math.sqrt(erase_area * aspect_ratio)))
            w = int(round(math.sqrt(erase_area / aspect_ratio)))
            if not (h < img_h and w < img_w):
                continue
            v = mininn.randn(img_c, h, w) if value is None else mininn.tensor(value)[:, None, None]
            return _randint(0, img_h - h + 1), _randint(0, img_w - w + 1), h, w, v
        return 0, 0, img_h, img_w, img

    def forward(self, img: Any) -> Any:
        if not _rand() < self.p:
            return img
        if isinstance(self.value, (int, float)):
            value: list[float] | None = [float(self.value)]
        elif isinstance(self.value, str):
            value = None
        else:
            value = [float(v) for v in self.value]
        if value is not None and len(value) not in (1, img.shape[-3]):
            raise ValueError("If value is a sequence, it should have either a single value or "
                             f"{img.shape[-3]} (number of input channels)")
        i, j, h, w, v = self.get_params(img, scale=self.scale, ratio=self.ratio, value=value)
        return F.erase(img, i, j, h, w, v, self.inplace)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(p={self.p}, scale={self.scale}, ratio={self.ratio}, "
                f"value={self.value}, inplace={self.inplace})")


class RandomApply(nn.Module):
    """Apply all of ``transforms`` with probability ``p``, else none."""

    def __init__(self, transforms: Sequence[Transform], p: float = 0.5) -> None:
        super().__init__()
        self.transforms = transforms
        self.p = p

    def forward(self, img: Any) -> Any:
        if self.p < _rand():
            return img
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        lines = "".join(f"\n    {t}" for t in self.transforms)
        return f"{self.__class__.__name__}(\n    p={self.p}{lines}\n)"


class _RandomTransforms:
    def __init__(self, transforms: Sequence[Transform]) -> None:
        if not isinstance(transforms, Sequence):
            raise TypeError("Argument transforms should be a sequence")
        self.transforms = transforms

    def __repr__(self) -> str:
        lines = "".join(f"\n    {t}" for t in self.transforms)
        return f"{self.__class__.__name__}({lines}\n)"


class RandomChoice(_RandomTransforms):
    """Apply one of ``transforms``, chosen with weights ``p`` (uniform when None)."""

    def __init__(self, transforms: Sequence[Transform], p: Sequence[float] | None = None) -> None:
        super().__init__(transforms)
        if p is not None and not isinstance(p, Sequence):
            raise TypeError("Argument p should be a sequence")
        self.p = p

    def __call__(self, *args: Any) -> Any:
        return random.choices(self.transforms, weights=self.p)[0](*args)

    def __repr__(self) -> str:
        return f"{super().__repr__()}(p={self.p})"


class RandomOrder(_RandomTransforms):
    """Apply all of ``transforms`` in a random order."""

    def __call__(self, img: Any) -> Any:
        order = list(range(len(self.transforms)))
        random.shuffle(order)
        for i in order:
            img = self.transforms[i](img)
        return img
