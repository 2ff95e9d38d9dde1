"""``torchvision.models.vision_transformer``: ViT B/16, B/32, L/16, L/32, H/14, torchvision's names and keys.

``conv_proj`` (the patchify convolution), ``class_token``, ``encoder.pos_embedding``,
``encoder.layers.encoder_layer_I`` (``ln_1``, ``self_attention``, ``ln_2``, ``mlp.0``, ``mlp.3``),
``encoder.ln`` and ``heads.head``, as in torchvision 0.28.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import mininn
from mininn import Tensor, nn
from mininn.vision.models._builder_args import refuse_weights, weights_enum
from mininn.vision.ops.misc import MLP, Conv2dNormActivation

__all__ = [
    "ViT_B_16_Weights",
    "ViT_B_32_Weights",
    "ViT_H_14_Weights",
    "ViT_L_16_Weights",
    "ViT_L_32_Weights",
    "VisionTransformer",
    "interpolate_embeddings",
    "ConvStemConfig",
    "MLPBlock",
    "EncoderBlock",
    "Encoder",
    "vit_b_16",
    "vit_b_32",
    "vit_l_16",
    "vit_l_32",
    "vit_h_14",
]

_LAYER_NORM = partial(nn.LayerNorm, eps=1e-6)


def _check(condition: bool, message: str) -> None:
    """torch._assert: an AssertionError with ``message`` when ``condition`` is false."""
    if not condition:
        raise AssertionError(message)


class ConvStemConfig(NamedTuple):
    """One conv-norm-activation layer of a convolutional stem (Xiao et al., 2021)."""

    out_channels: int
    kernel_size: int
    stride: int
    norm_layer: Callable[..., nn.Module] = nn.BatchNorm2d
    activation_layer: Callable[..., nn.Module] = nn.ReLU


class MLPBlock(MLP):
    """The encoder's MLP: ``Linear(in_dim, mlp_dim)``, GELU, dropout, ``Linear(mlp_dim, in_dim)``, dropout.

    Loads state dicts of the older layout (``linear_1``/``linear_2``) too, as torchvision's does.
    """

    _version = 2

    def __init__(self, in_dim: int, mlp_dim: int, dropout: float) -> None:
        super().__init__(in_dim, [mlp_dim, in_dim], activation_layer=nn.GELU, inplace=None, dropout=dropout)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.normal_(m.bias, std=1e-6)

    def _load_from_state_dict(
        self,
        state_dict: dict[str, Any],
        prefix: str,
        local_metadata: dict[str, Any],
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        version = local_metadata.get("version", None)
        if version is None or version < 2:
            for i in range(2):  # linear_1 -> 0, linear_2 -> 3
                for kind in ["weight", "bias"]:
                    old_key = f"{prefix}linear_{i + 1}.{kind}"
                    if old_key in state_dict:
                        state_dict[f"{prefix}{3 * i}.{kind}"] = state_dict.pop(old_key)
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )


class EncoderBlock(nn.Module):
    """Pre-norm transformer block: ``x + attn(ln_1(x))``, then ``+ mlp(ln_2(.))``."""

    def __init__(
        self,
        num_heads: int,
        hidden_dim: int,
        mlp_dim: int,
        dropout: float,
        attention_dropout: float,
        norm_layer: Callable[..., nn.Module] = _LAYER_NORM,
    ) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.ln_1 = norm_layer(hidden_dim)
        self.self_attention = nn.MultiheadAttention(
            hidden_dim, num_heads, dropout=attention_dropout, batch_first=True
        )
        self.dropout = nn.Dropout(dropout)
        self.ln_2 = norm_layer(hidden_dim)
        self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

    def forward(self, input: Tensor) -> Tensor:
        _check(input.dim() == 3, f"Expected (batch_size, seq_length, hidden_dim) got {input.shape}")
        x = self.ln_1(input)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x) + input
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    """Position embedding, dropout, ``num_layers`` :class:`EncoderBlock` and a final norm."""

    def __init__(
        self,
        seq_length: int,
        num_layers: int,
        num_heads: int,
        hidden_dim: int,
        mlp_dim: int,
        dropout: float,
        attention_dropout: float,
        norm_layer: Callable[..., nn.Module] = _LAYER_NORM,
    ) -> None:
        super().__init__()
        # batch first: (1, seq_length, hidden_dim), initialised as BERT's
        self.pos_embedding = nn.Parameter(nn.init.normal_(mininn.empty(1, seq_length, hidden_dim), std=0.02))
        self.dropout = nn.Dropout(dropout)
        layers: OrderedDict[str, nn.Module] = OrderedDict()
        for i in range(num_layers):
            layers[f"encoder_layer_{i}"] = EncoderBlock(
                num_heads, hidden_dim, mlp_dim, dropout, attention_dropout, norm_layer
            )
        self.layers = nn.Sequential(layers)
        self.ln = norm_layer(hidden_dim)

    def forward(self, input: Tensor) -> Tensor:
        _check(input.dim() == 3, f"Expected (batch_size, seq_length, hidden_dim) got {input.shape}")
        x = input + self.pos_embedding
        return self.ln(self.layers(self.dropout(x)))


class VisionTransformer(nn.Module):
    """Vision Transformer (Dosovitskiy et al., 2020): patches of ``patch_size``, a class token, an encoder.

    Args:
        image_size: side of the square input (the model accepts only this size).
        patch_size: side of each patch; must divide ``image_size``.
        num_layers: encoder blocks.
        num_heads: attention heads.
        hidden_dim: token width.
        mlp_dim: hidden width of each MLP.
        dropout: dropout rate. Default 0.0.
        attention_dropout: attention dropout rate. Default 0.0.
        num_classes: outputs. Default 1000.
        representation_size: width of a ``pre_logits`` layer (with tanh) before the head; None for none.
        norm_layer: the norm class. Default ``LayerNorm(eps=1e-6)``.
        conv_stem_configs: a convolutional stem instead of the patchify convolution.

    Raises:
        AssertionError: ``patch_size`` does not divide ``image_size`` (torchvision's message).
    """

    def __init__(
        self,
        image_size: int,
        patch_size: int,
        num_layers: int,
        num_heads: int,
        hidden_dim: int,
        mlp_dim: int,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        num_classes: int = 1000,
        representation_size: int | None = None,
        norm_layer: Callable[..., nn.Module] = _LAYER_NORM,
        conv_stem_configs: list[ConvStemConfig] | None = None,
    ) -> None:
        super().__init__()
        _check(image_size % patch_size == 0, "Input shape indivisible by patch size!")
        self.image_size = image_size
        self.patch_size = patch_size
        self.hidden_dim = hidden_dim
        self.mlp_dim = mlp_dim
        self.attention_dropout = attention_dropout
        self.dropout = dropout
        self.num_classes = num_classes
        self.representation_size = representation_size
        self.norm_layer = norm_layer
        self.conv_proj: nn.Module = (
            _conv_stem(conv_stem_configs, hidden_dim)
            if conv_stem_configs is not None
            else nn.Conv2d(in_channels=3, out_channels=hidden_dim, kernel_size=patch_size, stride=patch_size)
        )
        seq_length = (image_size // patch_size) ** 2 + 1  # + the class token
        self.class_token = nn.Parameter(mininn.zeros(1, 1, hidden_dim))
        self.encoder = Encoder(
            seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout, norm_layer
        )
        self.seq_length = seq_length
        heads_layers: OrderedDict[str, nn.Module] = OrderedDict()
        if representation_size is None:
            heads_layers["head"] = nn.Linear(hidden_dim, num_classes)
        else:
            heads_layers["pre_logits"] = nn.Linear(hidden_dim, representation_size)
            heads_layers["act"] = nn.Tanh()
            heads_layers["head"] = nn.Linear(representation_size, num_classes)
        self.heads = nn.Sequential(heads_layers)
        self._init_stem_and_heads()

    def _init_stem_and_heads(self) -> None:
        if isinstance(self.conv_proj, nn.Conv2d):
            fan_in = (
                self.conv_proj.in_channels * self.conv_proj.kernel_size[0] * self.conv_proj.kernel_size[1]
            )
            nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
            if self.conv_proj.bias is not None:
                nn.init.zeros_(self.conv_proj.bias)
        elif isinstance(getattr(self.conv_proj, "conv_last", None), nn.Conv2d):
            last = self.conv_proj.conv_last
            nn.init.normal_(last.weight, mean=0.0, std=math.sqrt(2.0 / last.out_channels))
            if last.bias is not None:
                nn.init.zeros_(last.bias)
        if isinstance(getattr(self.heads, "pre_logits", None), nn.Linear):
            fan_in = self.heads.pre_logits.in_features
            nn.init.trunc_normal_(self.heads.pre_logits.weight, std=math.sqrt(1 / fan_in))
            nn.init.zeros_(self.heads.pre_logits.bias)
        if isinstance(self.heads.head, nn.Linear):
            nn.init.zeros_(self.heads.head.weight)
            nn.init.zeros_(self.heads.head.bias)

    def _process_input(self, x: Tensor) -> Tensor:
        n, c, h, w = x.shape
        p = self.patch_size
        _check(h == self.image_size, f"Wrong image height! Expected {self.image_size} but got {h}!")
        _check(w == self.image_size, f"Wrong image width! Expected {self.image_size} but got {w}!")
        n_h, n_w = h // p, w // p
        x = self.conv_proj(x)  # (n, hidden_dim, n_h, n_w)
        x = x.reshape(n, self.hidden_dim, n_h * n_w)
        return x.permute(0, 2, 1)  # (n, n_h * n_w, hidden_dim)

    def forward(self, x: Tensor) -> Tensor:
        x = self._process_input(x)
        n = x.shape[0]
        batch_class_token = self.class_token.expand(n, -1, -1)
        x = mininn.cat([batch_class_token, x], dim=1)  # (n, seq_length, hidden_dim)
        x = self.encoder(x)
        return self.heads(x[:, 0])  # the class token's output


def _conv_stem(configs: list[ConvStemConfig], hidden_dim: int) -> nn.Sequential:
    """``conv_bn_relu_I`` for each config, then a 1x1 ``conv_last`` to ``hidden_dim``."""
    seq_proj = nn.Sequential()
    prev_channels = 3
    for i, cfg in enumerate(configs):
        seq_proj.add_module(
            f"conv_bn_relu_{i}",
            Conv2dNormActivation(
                in_channels=prev_channels,
                out_channels=cfg.out_channels,
                kernel_size=cfg.kernel_size,
                stride=cfg.stride,
                norm_layer=cfg.norm_layer,
                activation_layer=cfg.activation_layer,
            ),
        )
        prev_channels = cfg.out_channels
    seq_proj.add_module(
        "conv_last", nn.Conv2d(in_channels=prev_channels, out_channels=hidden_dim, kernel_size=1)
    )
    return seq_proj


def interpolate_embeddings(
    image_size: int,
    patch_size: int,
    model_state: OrderedDict[str, Tensor],
    interpolation_mode: str = "bicubic",
    reset_heads: bool = False,
) -> OrderedDict[str, Tensor]:
    """A ViT state dict whose ``encoder.pos_embedding`` fits ``image_size`` / ``patch_size``.

    The patch positions are resized as a square grid (``interpolation_mode``, corners aligned);
    the class token's embedding is kept. ``reset_heads`` drops the ``heads`` entries, but only
    when the embedding was resized, as in torchvision.

    Raises:
        ValueError: the embedding's batch dimension is not 1, or its patches do not form a square.
    """
    pos_embedding = model_state["encoder.pos_embedding"]
    n, seq_length, hidden_dim = pos_embedding.shape
    if n != 1:
        raise ValueError(f"Unexpected position embedding shape: {pos_embedding.shape}")
    new_seq_length = (image_size // patch_size) ** 2 + 1
    if new_seq_length == seq_length:
        return model_state
    seq_length, new_seq_length = seq_length - 1, new_seq_length - 1  # the patches, without the class token
    side = int(math.sqrt(seq_length))
    if side * side != seq_length:
        raise ValueError(
            f"seq_length is not a perfect square! Instead got seq_length_1d * seq_length_1d = {side * side} "
            f"and seq_length = {seq_length}"
        )
    grid = pos_embedding[:, 1:, :].permute(0, 2, 1).reshape(1, hidden_dim, side, side)
    new_side = image_size // patch_size
    grid = nn.functional.interpolate(grid, size=new_side, mode=interpolation_mode, align_corners=True)
    patches = grid.reshape(1, hidden_dim, new_seq_length).permute(0, 2, 1)  # (1, new_seq_length, hidden_dim)
    model_state["encoder.pos_embedding"] = mininn.cat([pos_embedding[:, :1, :], patches], dim=1)
    if reset_heads:
        model_state = OrderedDict((k, v) for k, v in model_state.items() if not k.startswith("heads"))
    return model_state


# builder -> (patch_size, num_layers, num_heads, hidden_dim, mlp_dim)
_CONFIGS: dict[str, tuple[int, int, int, int, int]] = {
    "vit_b_16": (16, 12, 12, 768, 3072),
    "vit_b_32": (32, 12, 12, 768, 3072),
    "vit_l_16": (16, 24, 16, 1024, 4096),
    "vit_l_32": (32, 24, 16, 1024, 4096),
    "vit_h_14": (14, 32, 16, 1280, 5120),
}


def _vision_transformer(name: str, weights: Any, kwargs: dict[str, Any]) -> VisionTransformer:
    refuse_weights(name, weights, kwargs)
    patch_size, num_layers, num_heads, hidden_dim, mlp_dim = _CONFIGS[name]
    image_size = kwargs.pop("image_size", 224)
    return VisionTransformer(
        image_size=image_size,
        patch_size=patch_size,
        num_layers=num_layers,
        num_heads=num_heads,
        hidden_dim=hidden_dim,
        mlp_dim=mlp_dim,
        **kwargs,
    )


def vit_b_16(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> VisionTransformer:
    """ViT-B/16 with random weights (``image_size`` default 224); ``kwargs`` go to :class:`VisionTransformer`.

    Raises:
        ValueError: ``weights`` is not None (mininn does not download weights).
    """
    return _vision_transformer("vit_b_16", weights, kwargs)


def vit_b_32(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> VisionTransformer:
    """ViT-B/32 with random weights; as :func:`vit_b_16`."""
    return _vision_transformer("vit_b_32", weights, kwargs)


def vit_l_16(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> VisionTransformer:
    """ViT-L/16 with random weights; as :func:`vit_b_16`."""
    return _vision_transformer("vit_l_16", weights, kwargs)


def vit_l_32(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> VisionTransformer:
    """ViT-L/32 with random weights; as :func:`vit_b_16`."""
    return _vision_transformer("vit_l_32", weights, kwargs)


def vit_h_14(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> VisionTransformer:
    """ViT-H/14 with random weights (632M parameters); as :func:`vit_b_16`."""
    return _vision_transformer("vit_h_14", weights, kwargs)


# torchvision's names of pretrained weights (mininn holds none: see _builder_args)
ViT_B_16_Weights = weights_enum(
    "ViT_B_16_Weights",
    ["IMAGENET1K_V1", "IMAGENET1K_SWAG_E2E_V1", "IMAGENET1K_SWAG_LINEAR_V1"],
    "IMAGENET1K_V1",
    __name__,
)
ViT_B_32_Weights = weights_enum("ViT_B_32_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__)
ViT_H_14_Weights = weights_enum(
    "ViT_H_14_Weights",
    ["IMAGENET1K_SWAG_E2E_V1", "IMAGENET1K_SWAG_LINEAR_V1"],
    "IMAGENET1K_SWAG_E2E_V1",
    __name__,
)
ViT_L_16_Weights = weights_enum(
    "ViT_L_16_Weights",
    ["IMAGENET1K_V1", "IMAGENET1K_SWAG_E2E_V1", "IMAGENET1K_SWAG_LINEAR_V1"],
    "IMAGENET1K_V1",
    __name__,
)
ViT_L_32_Weights = weights_enum("ViT_L_32_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__)
