"""torchvision.transforms on mininn."""

__all__: list[str] = []

# the basic transforms and their functional forms
from mininn.vision.transforms import functional  # noqa: E402
from mininn.vision.transforms.functional import InterpolationMode  # noqa: E402
from mininn.vision.transforms.transforms import (  # noqa: E402
    CenterCrop,
    Compose,
    ConvertImageDtype,
    Lambda,
    Normalize,
    PILToTensor,
    Resize,
    ToTensor,
)

__all__ += ["functional", "InterpolationMode", "CenterCrop", "Compose", "ConvertImageDtype", "Lambda",
            "Normalize", "PILToTensor", "Resize", "ToTensor"]

# training augmentations (flips, random crops, padding, grayscale, random containers)
from mininn.vision.transforms import augment  # noqa: E402
from mininn.vision.transforms.augment import *  # noqa: E402,F403
from mininn.vision.transforms.geometry import RandomAffine, RandomRotation  # noqa: E402
from mininn.vision.transforms.pil import ToPILImage  # noqa: E402

__all__ += augment.__all__ + ["RandomAffine", "RandomRotation", "ToPILImage"]
