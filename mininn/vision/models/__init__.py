"""torchvision.models on mininn."""

__all__: list[str] = []

from mininn.vision.models.convnext import (  # noqa: E402
    ConvNeXt,
    convnext_base,
    convnext_large,
    convnext_small,
    convnext_tiny,
)
from mininn.vision.models.efficientnet import (  # noqa: E402
    EfficientNet,
    efficientnet_b0,
    efficientnet_b1,
    efficientnet_b2,
    efficientnet_b3,
    efficientnet_b4,
    efficientnet_b5,
    efficientnet_b6,
    efficientnet_b7,
    efficientnet_v2_l,
    efficientnet_v2_m,
    efficientnet_v2_s,
)
from mininn.vision.models.mobilenetv2 import MobileNetV2, mobilenet_v2  # noqa: E402
from mininn.vision.models.mobilenetv3 import MobileNetV3, mobilenet_v3_large, mobilenet_v3_small  # noqa: E402
from mininn.vision.models.regnet import (  # noqa: E402
    RegNet,
    regnet_x_1_6gf,
    regnet_x_3_2gf,
    regnet_x_8gf,
    regnet_x_16gf,
    regnet_x_32gf,
    regnet_x_400mf,
    regnet_x_800mf,
    regnet_y_1_6gf,
    regnet_y_3_2gf,
    regnet_y_8gf,
    regnet_y_16gf,
    regnet_y_32gf,
    regnet_y_128gf,
    regnet_y_400mf,
    regnet_y_800mf,
)
from mininn.vision.models.swin_transformer import (  # noqa: E402
    SwinTransformer,
    swin_b,
    swin_s,
    swin_t,
    swin_v2_b,
    swin_v2_s,
    swin_v2_t,
)
from mininn.vision.models.vision_transformer import (  # noqa: E402
    VisionTransformer,
    vit_b_16,
    vit_b_32,
    vit_h_14,
    vit_l_16,
    vit_l_32,
)

__all__ += [
    "ConvNeXt", "convnext_tiny", "convnext_small", "convnext_base", "convnext_large",
    "EfficientNet", "efficientnet_b0", "efficientnet_b1", "efficientnet_b2", "efficientnet_b3",
    "efficientnet_b4", "efficientnet_b5", "efficientnet_b6", "efficientnet_b7", "efficientnet_v2_s",
    "efficientnet_v2_m", "efficientnet_v2_l",
    "MobileNetV2", "mobilenet_v2", "MobileNetV3", "mobilenet_v3_large", "mobilenet_v3_small",
    "RegNet", "regnet_y_400mf", "regnet_y_800mf", "regnet_y_1_6gf", "regnet_y_3_2gf", "regnet_y_8gf",
    "regnet_y_16gf", "regnet_y_32gf", "regnet_y_128gf", "regnet_x_400mf", "regnet_x_800mf", "regnet_x_1_6gf",
    "regnet_x_3_2gf", "regnet_x_8gf", "regnet_x_16gf", "regnet_x_32gf",
    "SwinTransformer", "swin_t", "swin_s", "swin_b", "swin_v2_t", "swin_v2_s", "swin_v2_b",
    "VisionTransformer", "vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14",
]
