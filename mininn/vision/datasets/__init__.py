"""torchvision.datasets on mininn."""

__all__: list[str] = []

# dataset names that import and refuse to build (mininn serves models, not datasets)
from mininn.vision.datasets import refused  # noqa: E402
from mininn.vision.datasets.refused import *  # noqa: E402,F403

__all__ += refused.__all__
