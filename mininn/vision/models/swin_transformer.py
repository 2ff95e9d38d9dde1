"""``torchvision.models.swin_transformer``: Swin T/S/B and Swin V2 T/S/B, torchvision's names and keys.

``features.0`` is the patch embedding (conv, permute, norm), then stages of blocks
(``features.S.B.norm1``, ``.attn.qkv``, ``.attn.proj``, ``.attn.relative_position_bias_table``,
``.norm2``, ``.mlp.0``, ``.mlp.3``) alternating with :class:`PatchMerging`, then ``norm`` and
``head``, as in torchvision 0.28. Tensors inside the stages are ``(B, H, W, C)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import mininn
from mininn import Tensor, nn
from mininn.nn import functional as F
from mininn.vision.models._builder_args import refuse_weights, weights_enum
from mininn.vision.ops.misc import MLP, Permute
from mininn.vision.ops.stochastic_depth import StochasticDepth

__all__ = [
    "Swin_B_Weights",
    "Swin_S_Weights",
    "Swin_T_Weights",
    "Swin_V2_B_Weights",
    "Swin_V2_S_Weights",
    "Swin_V2_T_Weights",
    "SwinTransformer",
    "SwinTransformerBlock",
    "SwinTransformerBlockV2",
    "ShiftedWindowAttention",
    "ShiftedWindowAttentionV2",
    "PatchMerging",
    "PatchMergingV2",
    "shifted_window_attention",
    "swin_t",
    "swin_s",
    "swin_b",
    "swin_v2_t",
    "swin_v2_s",
    "swin_v2_b",
]


def _patch_merging_pad(x: Tensor) -> Tensor:
    """``(..., H, W, C)`` -> ``(..., ceil(H/2), ceil(W/2), 4C)``: 2x2 neighbourhoods side by side."""
    h, w, _ = x.shape[-3:]
    x = F.pad(x, (0, 0, 0, w % 2, 0, h % 2))
    x0 = x[..., 0::2, 0::2, :]
    x1 = x[..., 1::2, 0::2, :]
    x2 = x[..., 0::2, 1::2, :]
    x3 = x[..., 1::2, 1::2, :]
    return mininn.cat([x0, x1, x2, x3], -1)


def _get_relative_position_bias(table: Tensor, index: Tensor, window_size: list[int]) -> Tensor:
    """``(1, heads, N, N)`` biases for the ``N = Wh * Ww`` tokens of a window."""
    n = window_size[0] * window_size[1]
    bias = table[index].view(n, n, -1)  # (N, N, heads)
    return bias.permute(2, 0, 1).contiguous().unsqueeze(0)


class PatchMerging(nn.Module):
    """Halve H and W, double C: 2x2 neighbourhoods concatenated, ``norm`` (4C), ``reduction`` to 2C."""

    def __init__(self, dim: int, norm_layer: Callable[..., nn.Module] = nn.LayerNorm) -> None:
        super().__init__()
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(4 * dim)

    def forward(self, x: Tensor) -> Tensor:
        return self.reduction(self.norm(_patch_merging_pad(x)))  # (..., H/2, W/2, 2C)


class PatchMergingV2(nn.Module):
    """Swin V2's patch merging: ``reduction`` to 2C first, then ``norm`` (2C)."""

    def __init__(self, dim: int, norm_layer: Callable[..., nn.Module] = nn.LayerNorm) -> None:
        super().__init__()
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(2 * dim)

    def forward(self, x: Tensor) -> Tensor:
        return self.norm(self.reduction(_patch_merging_pad(x)))


def _shift_mask(x: Tensor, pad_h: int, pad_w: int, window_size: list[int], shift_size: list[int]) -> Tensor:
    """``(num_windows, N, N)``: -100 between tokens from different regions before the shift, else 0."""
    mask = x.new_zeros((pad_h, pad_w))
    h_slices = ((0, -window_size[0]), (-window_size[0], -shift_size[0]), (-shift_size[0], None))
    w_slices = ((0, -window_size[1]), (-window_size[1], -shift_size[1]), (-shift_size[1], None))
    count = 0
    for h in h_slices:
        for w in w_slices:
            mask[h[0] : h[1], w[0] : w[1]] = count
            count += 1
    num_windows = (pad_h // window_size[0]) * (pad_w // window_size[1])
    mask = mask.view(pad_h // window_size[0], window_size[0], pad_w // window_size[1], window_size[1])
    mask = mask.permute(0, 2, 1, 3).reshape(num_windows, window_size[0] * window_size[1])
    mask = mask.unsqueeze(1) - mask.unsqueeze(2)
    return mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)


def _windows(x: Tensor, window_size: list[int]) -> Tensor:
    """``(B, H, W, C)`` -> ``(B * num_windows, Wh * Ww, C)``."""
    b, h, w, c = x.shape
    x = x.view(b, h // window_size[0], window_size[0], w // window_size[1], window_size[1], c)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, window_size[0] * window_size[1], c)


def _attention(
    x: Tensor, qkv_weight: Tensor, qkv_bias: Tensor | None, num_heads: int, logit_scale: Tensor | None
) -> tuple[Tensor, Tensor]:
    """Scaled dot-product (or, with ``logit_scale``, cosine) scores ``(B*nW, heads, N, N)`` and values."""
    c = x.shape[-1]
    if logit_scale is not None and qkv_bias is not None:  # V2 has no key bias
        length = qkv_bias.numel() // 3
        key_bias = mininn.zeros_like(qkv_bias[length : 2 * length])
        qkv_bias = mininn.cat([qkv_bias[:length], key_bias, qkv_bias[2 * length :]])
    qkv = F.linear(x, qkv_weight, qkv_bias)
    qkv = qkv.reshape(x.size(0), x.size(1), 3, num_heads, c // num_heads).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]  # (B*nW, heads, N, C/heads)
    if logit_scale is not None:
        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        return attn * mininn.clamp(logit_scale, max=math.log(100.0)).exp(), v
    q = q * (c // num_heads) ** -0.5
    return q.matmul(k.transpose(-2, -1)), v


def shifted_window_attention(
    input: Tensor,
    qkv_weight: Tensor,
    proj_weight: Tensor,
    relative_position_bias: Tensor,
    window_size: list[int],
    num_heads: int,
    shift_size: list[int],
    attention_dropout: float = 0.0,
    dropout: float = 0.0,
    qkv_bias: Tensor | None = None,
    proj_bias: Tensor | None = None,
    logit_scale: Tensor | None = None,
    training: bool = True,
) -> Tensor:
    """Window multi-head self-attention with relative position bias, on (cyclically shifted) windows.

    Args:
        input: ``(B, H, W, C)``; padded to multiples of ``window_size`` and cropped back.
        qkv_weight: ``(3C, C)``.
        proj_weight: ``(C, C)``.
        relative_position_bias: ``(1, heads, N, N)`` added to the scores.
        window_size: ``[Wh, Ww]``.
        num_heads: attention heads.
        shift_size: cyclic shift; a dimension no larger than its window is not shifted.
        attention_dropout: dropout of the attention weights.
        dropout: dropout of the output.
        qkv_bias: ``(3C,)`` or None.
        proj_bias: ``(C,)`` or None.
        logit_scale: Swin V2's cosine attention scale, ``(heads, 1, 1)``, or None.
        training: whether the dropouts apply.

    Returns:
        ``(B, H, W, C)``.
    """
    b, h, w, c = input.shape
    pad_r = (window_size[1] - w % window_size[1]) % window_size[1]
    pad_b = (window_size[0] - h % window_size[0]) % window_size[0]
    x = F.pad(input, (0, 0, 0, pad_r, 0, pad_b))
    _, pad_h, pad_w, _ = x.shape
    shift_size = shift_size.copy()
    if window_size[0] >= pad_h:
        shift_size[0] = 0
    if window_size[1] >= pad_w:
        shift_size[1] = 0
    if sum(shift_size) > 0:
        x = mininn.roll(x, shifts=(-shift_size[0], -shift_size[1]), dims=(1, 2))
    num_windows = (pad_h // window_size[0]) * (pad_w // window_size[1])
    x = _windows(x, window_size)  # (B*nW, N, C)
    attn, v = _attention(x, qkv_weight, qkv_bias, num_heads, logit_scale)
    attn = attn + relative_position_bias
    if sum(shift_size) > 0:
        mask = _shift_mask(x, pad_h, pad_w, window_size, shift_size)
        attn = attn.view(x.size(0) // num_windows, num_windows, num_heads, x.size(1), x.size(1))
        attn = (attn + mask.unsqueeze(1).unsqueeze(0)).view(-1, num_heads, x.size(1), x.size(1))
    attn = F.dropout(F.softmax(attn, dim=-1), p=attention_dropout, training=training)
    x = attn.matmul(v).transpose(1, 2).reshape(x.size(0), x.size(1), c)
    x = F.dropout(F.linear(x, proj_weight, proj_bias), p=dropout, training=training)
    # windows back to (B, H, W, C)
    x = x.view(b, pad_h // window_size[0], pad_w // window_size[1], window_size[0], window_size[1], c)
    x = x.permute(0, 1, 3, 2, 4, 5).reshape(b, pad_h, pad_w, c)
    if sum(shift_size) > 0:
        x = mininn.roll(x, shifts=(shift_size[0], shift_size[1]), dims=(1, 2))
    return x[:, :h, :w, :].contiguous()


class ShiftedWindowAttention(nn.Module):
    """:func:`shifted_window_attention` with its weights (``qkv``, ``proj``) and a learned bias table.

    Raises:
        ValueError: ``window_size`` or ``shift_size`` is not of length 2.
    """

    def __init__(
        self,
        dim: int,
        window_size: list[int],
        shift_size: list[int],
        num_heads: int,
        qkv_bias: bool = True,
        proj_bias: bool = True,
        attention_dropout: float = 0.0,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if len(window_size) != 2 or len(shift_size) != 2:
            raise ValueError("window_size and shift_size must be of length 2")
        self.window_size = window_size
        self.shift_size = shift_size
        self.num_heads = num_heads
        self.attention_dropout = attention_dropout
        self.dropout = dropout
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim, bias=proj_bias)
        self.define_relative_position_bias_table()
        self.define_relative_position_index()

    def define_relative_position_bias_table(self) -> None:
        """``relative_position_bias_table``: ``((2Wh-1)(2Ww-1), heads)``, truncated normal (std 0.02)."""
        size = (2 * self.window_size[0] - 1) * (2 * self.window_size[1] - 1)
        self.relative_position_bias_table = nn.Parameter(mininn.zeros(size, self.num_heads))
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    def define_relative_position_index(self) -> None:
        """``relative_position_index``: for each pair of a window's tokens, its row in the table."""
        coords = mininn.stack(
            mininn.meshgrid(
                mininn.arange(self.window_size[0]), mininn.arange(self.window_size[1]), indexing="ij"
            )
        )  # (2, Wh, Ww)
        flat = mininn.flatten(coords, 1)  # (2, N)
        relative = (flat[:, :, None] - flat[:, None, :]).permute(1, 2, 0).contiguous()  # (N, N, 2)
        relative[:, :, 0] += self.window_size[0] - 1  # shift to start from 0
        relative[:, :, 1] += self.window_size[1] - 1
        relative[:, :, 0] *= 2 * self.window_size[1] - 1
        self.register_buffer("relative_position_index", relative.sum(-1).flatten())

    def get_relative_position_bias(self) -> Tensor:
        """``(1, heads, N, N)``."""
        return _get_relative_position_bias(
            self.relative_position_bias_table, self.relative_position_index, self.window_size
        )

    def forward(self, x: Tensor) -> Tensor:
        return shifted_window_attention(
            x,
            self.qkv.weight,
            self.proj.weight,
            self.get_relative_position_bias(),
            self.window_size,
            self.num_heads,
            shift_size=self.shift_size,
            attention_dropout=self.attention_dropout,
            dropout=self.dropout,
            qkv_bias=self.qkv.bias,
            proj_bias=self.proj.bias,
            logit_scale=self._scores_scale(),
            training=self.training,
        )

    def _scores_scale(self) -> Tensor | None:
        """None: scaled dot-product scores (V2 returns its learned ``logit_scale`` for cosine scores)."""
        return None


class ShiftedWindowAttentionV2(ShiftedWindowAttention):
    """Swin V2's attention: cosine scores scaled by ``logit_scale``, biases from a small MLP (``cpb_mlp``)."""

    def __init__(
        self,
        dim: int,
        window_size: list[int],
        shift_size: list[int],
        num_heads: int,
        qkv_bias: bool = True,
        proj_bias: bool = True,
        attention_dropout: float = 0.0,
        dropout: float = 0.0,
    ) -> None:
        super().__init__(
            dim,
            window_size,
            shift_size,
            num_heads,
            qkv_bias=qkv_bias,
            proj_bias=proj_bias,
            attention_dropout=attention_dropout,
            dropout=dropout,
        )
        self.logit_scale = nn.Parameter(mininn.log(10 * mininn.ones((num_heads, 1, 1))))
        self.cpb_mlp = nn.Sequential(
            nn.Linear(2, 512, bias=True), nn.ReLU(inplace=True), nn.Linear(512, num_heads, bias=False)
        )
        if qkv_bias:
            length = self.qkv.bias.numel() // 3
            with mininn.no_grad():
                self.qkv.bias[length : 2 * length].zero_()

    def define_relative_position_bias_table(self) -> None:
        """``relative_coords_table``: ``(1, 2Wh-1, 2Ww-1, 2)`` log-spaced relative coordinates."""
        coords_h = mininn.arange(-(self.window_size[0] - 1), self.window_size[0], dtype=mininn.float32)
        coords_w = mininn.arange(-(self.window_size[1] - 1), self.window_size[1], dtype=mininn.float32)
        table = mininn.stack(mininn.meshgrid([coords_h, coords_w], indexing="ij"))
        table = table.permute(1, 2, 0).contiguous().unsqueeze(0)  # (1, 2Wh-1, 2Ww-1, 2)
        table[:, :, :, 0] /= self.window_size[0] - 1
        table[:, :, :, 1] /= self.window_size[1] - 1
        table *= 8  # normalise to -8, 8
        table = mininn.sign(table) * mininn.log2(mininn.abs(table) + 1.0) / 3.0
        self.register_buffer("relative_coords_table", table)

    def get_relative_position_bias(self) -> Tensor:
        table = self.cpb_mlp(self.relative_coords_table).view(-1, self.num_heads)
        bias = _get_relative_position_bias(table, self.relative_position_index, self.window_size)
        return 16 * mininn.sigmoid(bias)

    def _scores_scale(self) -> Tensor:
        return self.logit_scale


class SwinTransformerBlock(nn.Module):
    """``x + drop(attn(norm1(x)))``, then ``+ drop(mlp(norm2(.)))``.

    Args:
        dim: channels.
        num_heads: attention heads.
        window_size: ``[Wh, Ww]``.
        shift_size: the cyclic shift (0 or half the window).
        mlp_ratio: MLP hidden width per channel. Default 4.0.
        dropout: dropout rate. Default 0.0.
        attention_dropout: attention dropout rate. Default 0.0.
        stochastic_depth_prob: drop probability of both residual branches. Default 0.0.
        norm_layer: the norm class. Default ``nn.LayerNorm``.
        attn_layer: the attention class. Default :class:`ShiftedWindowAttention`.
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        window_size: list[int],
        shift_size: list[int],
        mlp_ratio: float = 4.0,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        stochastic_depth_prob: float = 0.0,
        norm_layer: Callable[..., nn.Module] = nn.LayerNorm,
        attn_layer: Callable[..., nn.Module] = ShiftedWindowAttention,
    ) -> None:
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = attn_layer(
            dim, window_size, shift_size, num_heads, attention_dropout=attention_dropout, dropout=dropout
        )
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.norm2 = norm_layer(dim)
        self.mlp = MLP(
            dim, [int(dim * mlp_ratio), dim], activation_layer=nn.GELU, inplace=None, dropout=dropout
        )
        for m in self.mlp.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.normal_(m.bias, std=1e-6)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.stochastic_depth(self.attn(self.norm1(x)))
        return x + self.stochastic_depth(self.mlp(self.norm2(x)))


class SwinTransformerBlockV2(SwinTransformerBlock):
    """Swin V2's block: the norms come after attention and MLP (``x + drop(norm1(attn(x)))``)."""

    def __init__(
        self,
        dim: int,
        num_heads: int,
        window_size: list[int],
        shift_size: list[int],
        mlp_ratio: float = 4.0,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        stochastic_depth_prob: float = 0.0,
        norm_layer: Callable[..., nn.Module] = nn.LayerNorm,
        attn_layer: Callable[..., nn.Module] = ShiftedWindowAttentionV2,
    ) -> None:
        super().__init__(
            dim,
            num_heads,
            window_size,
            shift_size,
            mlp_ratio=mlp_ratio,
            dropout=dropout,
            attention_dropout=attention_dropout,
            stochastic_depth_prob=stochastic_depth_prob,
            norm_layer=norm_layer,
            attn_layer=attn_layer,
        )

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.stochastic_depth(self.norm1(self.attn(x)))
        return x + self.stochastic_depth(self.norm2(self.mlp(x)))


class SwinTransformer(nn.Module):
    """Swin Transformer (Liu et al., 2021; V2 with the V2 block and patch merging).

    Args:
        patch_size: ``[ph, pw]`` of the patch embedding.
        embed_dim: channels after the patch embedding (doubled at each stage).
        depths: blocks per stage.
        num_heads: attention heads per stage.
        window_size: ``[Wh, Ww]``.
        mlp_ratio: MLP hidden width per channel. Default 4.0.
        dropout: dropout rate. Default 0.0.
        attention_dropout: attention dropout rate. Default 0.0.
        stochastic_depth_prob: the last block's drop probability (earlier ones scale linearly). Default 0.1.
        num_classes: outputs. Default 1000.
        norm_layer: the norm class. Default ``LayerNorm(eps=1e-5)``.
        block: the block class. Default :class:`SwinTransformerBlock`.
        downsample_layer: the patch merging class. Default :class:`PatchMerging`.
    """

    def __init__(
        self,
        patch_size: list[int],
        embed_dim: int,
        depths: list[int],
        num_heads: list[int],
        window_size: list[int],
        mlp_ratio: float = 4.0,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        stochastic_depth_prob: float = 0.1,
        num_classes: int = 1000,
        norm_layer: Callable[..., nn.Module] | None = None,
        block: Callable[..., nn.Module] | None = None,
        downsample_layer: Callable[..., nn.Module] = PatchMerging,
    ) -> None:
        super().__init__()
        self.num_classes = num_classes
        block = SwinTransformerBlock if block is None else block
        norm_layer = partial(nn.LayerNorm, eps=1e-5) if norm_layer is None else norm_layer
        layers: list[nn.Module] = [
            nn.Sequential(
                nn.Conv2d(
                    3,
                    embed_dim,
                    kernel_size=(patch_size[0], patch_size[1]),
                    stride=(patch_size[0], patch_size[1]),
                ),
                Permute([0, 2, 3, 1]),
                norm_layer(embed_dim),
            )
        ]
        total_blocks = sum(depths)
        block_id = 0
        for i_stage in range(len(depths)):
            stage: list[nn.Module] = []
            dim = embed_dim * 2**i_stage
            for i_layer in range(depths[i_stage]):
                sd_prob = stochastic_depth_prob * float(block_id) / (total_blocks - 1)
                stage.append(
                    block(
                        dim,
                        num_heads[i_stage],
                        window_size=window_size,
                        shift_size=[0 if i_layer % 2 == 0 else w // 2 for w in window_size],
                        mlp_ratio=mlp_ratio,
                        dropout=dropout,
                        attention_dropout=attention_dropout,
                        stochastic_depth_prob=sd_prob,
                        norm_layer=norm_layer,
                    )
                )
                block_id += 1
            layers.append(nn.Sequential(*stage))
            if i_stage < len(depths) - 1:
                layers.append(downsample_layer(dim, norm_layer))
        self.features = nn.Sequential(*layers)
        num_features = embed_dim * 2 ** (len(depths) - 1)
        self.norm = norm_layer(num_features)
        self.permute = Permute([0, 3, 1, 2])  # (B, H, W, C) -> (B, C, H, W)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten(1)
        self.head = nn.Linear(num_features, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x: Tensor) -> Tensor:
        x = self.norm(self.features(x))  # (B, H/32, W/32, C)
        x = self.flatten(self.avgpool(self.permute(x)))  # (B, C)
        return self.head(x)


# builder -> (embed_dim, depths, num_heads, window side, default stochastic depth, V2)
_CONFIGS: dict[str, tuple[int, list[int], list[int], int, float, bool]] = {
    "swin_t": (96, [2, 2, 6, 2], [3, 6, 12, 24], 7, 0.2, False),
    "swin_s": (96, [2, 2, 18, 2], [3, 6, 12, 24], 7, 0.3, False),
    "swin_b": (128, [2, 2, 18, 2], [4, 8, 16, 32], 7, 0.5, False),
    "swin_v2_t": (96, [2, 2, 6, 2], [3, 6, 12, 24], 8, 0.2, True),
    "swin_v2_s": (96, [2, 2, 18, 2], [3, 6, 12, 24], 8, 0.3, True),
    "swin_v2_b": (128, [2, 2, 18, 2], [4, 8, 16, 32], 8, 0.5, True),
}


def _swin(name: str, weights: Any, kwargs: dict[str, Any]) -> SwinTransformer:
    refuse_weights(name, weights, kwargs)
    embed_dim, depths, num_heads, window, sd_prob, v2 = _CONFIGS[name]
    if v2:
        kwargs = {"block": SwinTransformerBlockV2, "downsample_layer": PatchMergingV2, **kwargs}
    return SwinTransformer(
        patch_size=[4, 4],
        embed_dim=embed_dim,
        depths=depths,
        num_heads=num_heads,
        window_size=[window, window],
        stochastic_depth_prob=sd_prob,
        **kwargs,
    )


def swin_t(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> SwinTransformer:
    """Swin-T with random weights; ``kwargs`` go to :class:`SwinTransformer`.

    Raises:
        ValueError: ``weights`` is not None (mininn does not download weights).
    """
    return _swin("swin_t", weights, kwargs)


def swin_s(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> SwinTransformer:
    """Swin-S with random weights; as :func:`swin_t`."""
    return _swin("swin_s", weights, kwargs)


def swin_b(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> SwinTransformer:
    """Swin-B with random weights; as :func:`swin_t`."""
    return _swin("swin_b", weights, kwargs)


def swin_v2_t(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> SwinTransformer:
    """Swin V2-T with random weights (window 8); as :func:`swin_t`."""
    return _swin("swin_v2_t", weights, kwargs)


def swin_v2_s(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> SwinTransformer:
    """Swin V2-S with random weights (window 8); as :func:`swin_t`."""
    return _swin("swin_v2_s", weights, kwargs)


def swin_v2_b(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> SwinTransformer:
    """Swin V2-B with random weights (window 8); as :func:`swin_t`."""
    return _swin("swin_v2_b", weights, kwargs)


# torchvision's names of pretrained weights (mininn holds none: see _builder_args)
Swin_B_Weights = weights_enum("Swin_B_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__)
Swin_S_Weights = weights_enum("Swin_S_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__)
Swin_T_Weights = weights_enum("Swin_T_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__)
Swin_V2_B_Weights = weights_enum("Swin_V2_B_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__)
Swin_V2_S_Weights = weights_enum("Swin_V2_S_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__)
Swin_V2_T_Weights = weights_enum("Swin_V2_T_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__)
