"""torchvision.ops on mininn."""

__all__: list[str] = []

from mininn.vision.ops.misc import (  # noqa: E402 - appended per part
    MLP,
    Conv2dNormActivation,
    Conv3dNormActivation,
    Permute,
    SqueezeExcitation,
)
from mininn.vision.ops.stochastic_depth import StochasticDepth, stochastic_depth  # noqa: E402

__all__ += ["Conv2dNormActivation", "Conv3dNormActivation", "MLP", "Permute", "SqueezeExcitation",
            "StochasticDepth", "stochastic_depth"]
# boxes, RoI Align, FrozenBatchNorm2d
from mininn.vision.ops.boxes import (  # noqa: E402
    batched_nms,
    box_area,
    box_convert,
    box_iou,
    clip_boxes_to_image,
    generalized_box_iou,
    nms,
    remove_small_boxes,
)
from mininn.vision.ops.frozen_batch_norm import FrozenBatchNorm2d  # noqa: E402
from mininn.vision.ops.roi_align import RoIAlign, roi_align  # noqa: E402
from mininn.vision.ops.roi_pool import RoIPool, roi_pool  # noqa: E402

__all__ += [
    "batched_nms", "box_area", "box_convert", "box_iou", "clip_boxes_to_image", "generalized_box_iou", "nms",
    "remove_small_boxes", "FrozenBatchNorm2d", "RoIAlign", "roi_align", "RoIPool", "roi_pool",
]
