"""``torchvision.models.mobilenet``: MobileNetV2 and V3 under the module name torchvision also gives them."""

from mininn.vision.models.mobilenetv2 import *  # noqa: F403
from mininn.vision.models.mobilenetv2 import __all__ as _v2_all
from mininn.vision.models.mobilenetv3 import *  # noqa: F403
from mininn.vision.models.mobilenetv3 import __all__ as _v3_all

__all__ = _v2_all + _v3_all
