"""torchvision.models on mininn."""

__all__: list[str] = []

# classic families (ResNet, VGG, DenseNet, SqueezeNet, ShuffleNet V2)
from mininn.vision.models import densenet, resnet, shufflenetv2, squeezenet, vgg  # noqa: E402
from mininn.vision.models.densenet import *  # noqa: E402,F403
from mininn.vision.models.resnet import *  # noqa: E402,F403
from mininn.vision.models.shufflenetv2 import *  # noqa: E402,F403
from mininn.vision.models.squeezenet import *  # noqa: E402,F403
from mininn.vision.models.vgg import *  # noqa: E402,F403

__all__ += ["densenet", "resnet", "shufflenetv2", "squeezenet", "vgg"]
__all__ += densenet.__all__ + resnet.__all__ + shufflenetv2.__all__ + squeezenet.__all__
__all__ += [name for name in vgg.__all__ if name != "make_layers"]
