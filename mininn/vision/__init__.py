"""The part of torchvision that model files build on, on mininn.

In served model code (:func:`mininn.torch_alias.load_code`), ``import torchvision``
answers with this package: ``torchvision.models`` (classification families with
torchvision's module names and state-dict keys), ``torchvision.ops``,
``torchvision.transforms`` (tensor transforms) and ``torchvision.datasets`` (importable;
it refuses to download). What it lacks raises ``torchvision.<name> is not available in
mininn``.
"""

from mininn.vision import datasets, models, ops, transforms

__all__ = ["datasets", "models", "ops", "transforms"]

# torchvision.utils (make_grid, save_image)
from mininn.vision import utils  # noqa: E402

__all__ += ["utils"]
