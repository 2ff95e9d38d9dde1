"""Swin Transformer V1/V2 on mininn against torchvision: outputs on the same weights, padding, errors."""

from __future__ import annotations

import numpy as np
import pytest
from _model_parity import assert_same_gradients, assert_same_outputs, cheap_init
from _torchvision import import_torchvision

import mininn
from mininn.vision.models import swin_transformer as swin

torchvision = import_torchvision()
torch = pytest.importorskip("torch")
tv_swin = torchvision.models.swin_transformer

SMALL = dict(
    patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4], window_size=[3, 3], num_classes=5
)


@pytest.mark.parametrize("version", [1, 2])
def test_small_configuration_outputs_equal_torchvision_with_padding(version: int) -> None:
    extra_theirs = (
        {}
        if version == 1
        else dict(block=tv_swin.SwinTransformerBlockV2, downsample_layer=tv_swin.PatchMergingV2)
    )
    extra_ours = (
        {} if version == 1 else dict(block=swin.SwinTransformerBlockV2, downsample_layer=swin.PatchMergingV2)
    )
    torch.manual_seed(0)
    theirs = tv_swin.SwinTransformer(**SMALL, **extra_theirs)
    ours = swin.SwinTransformer(**SMALL, **extra_ours)
    assert repr(ours) == repr(theirs)
    # 36x44 -> 9x11 tokens: windows of 3 pad the width, patch merging pads the odd height
    assert_same_outputs(torch, theirs, ours, (2, 3, 36, 44))


@pytest.mark.parametrize("version", [1, 2])
def test_small_configuration_gradients_equal_torchvision(version: int) -> None:
    torch.manual_seed(0)
    kwargs = dict(SMALL, stochastic_depth_prob=0.0)
    if version == 2:
        theirs = tv_swin.SwinTransformer(
            **kwargs, block=tv_swin.SwinTransformerBlockV2, downsample_layer=tv_swin.PatchMergingV2
        )
        ours = swin.SwinTransformer(
            **kwargs, block=swin.SwinTransformerBlockV2, downsample_layer=swin.PatchMergingV2
        )
    else:
        theirs, ours = tv_swin.SwinTransformer(**kwargs), swin.SwinTransformer(**kwargs)
    assert_same_gradients(torch, theirs, ours, (2, 3, 36, 44))


@pytest.mark.parametrize("shift", [[0, 0], [2, 1]])
def test_shifted_window_attention_equals_torchvisions(shift: list[int]) -> None:
    rng = np.random.default_rng(0)
    x, qkv_w, proj_w = (rng.standard_normal(s).astype(np.float32) for s in [(2, 7, 9, 8), (24, 8), (8, 8)])
    bias, qkv_b, proj_b = (rng.standard_normal(s).astype(np.float32) for s in [(1, 2, 16, 16), (24,), (8,)])
    scale = np.full((2, 1, 1), 2.0, np.float32)
    qkv_b_before = qkv_b.copy()
    for logit_scale in (None, scale):
        args = [x, qkv_w, proj_w, bias]
        kwargs = dict(
            window_size=[4, 4],
            num_heads=2,
            shift_size=shift,
            qkv_bias=qkv_b,
            proj_bias=proj_b,
            training=False,
        )
        ls_t = None if logit_scale is None else torch.from_numpy(logit_scale)
        ls_m = None if logit_scale is None else mininn.from_numpy(logit_scale)
        expected = tv_swin.shifted_window_attention(
            *map(torch.from_numpy, args),
            **{**kwargs, "qkv_bias": torch.from_numpy(qkv_b), "proj_bias": torch.from_numpy(proj_b)},
            logit_scale=ls_t,
        )
        got = swin.shifted_window_attention(
            *map(mininn.from_numpy, args),
            **{**kwargs, "qkv_bias": mininn.from_numpy(qkv_b), "proj_bias": mininn.from_numpy(proj_b)},
            logit_scale=ls_m,
        )
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(qkv_b, qkv_b_before)  # V2 zeroes the key bias of a copy


def test_v2_attention_keeps_the_caller_bias_and_zeroes_the_key_bias_at_init() -> None:
    attn = swin.ShiftedWindowAttentionV2(8, [3, 3], [0, 0], 2)
    bias = attn.qkv.bias.detach().numpy()
    assert not bias[8:16].any() and bias[:8].any()
    theirs = tv_swin.ShiftedWindowAttentionV2(8, [3, 3], [0, 0], 2)
    for name in ["relative_coords_table", "relative_position_index"]:
        np.testing.assert_allclose(getattr(attn, name).numpy(), getattr(theirs, name).numpy(), rtol=1e-6)
        assert (
            str(getattr(attn, name).dtype).rsplit(".")[-1] == str(getattr(theirs, name).dtype).rsplit(".")[-1]
        )


@pytest.mark.slow
@pytest.mark.parametrize(("name", "side"), [("swin_t", 224), ("swin_v2_t", 256)])
def test_builder_outputs_equal_torchvision(name: str, side: int, monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    theirs = getattr(torchvision.models, name)()
    with cheap_init(monkeypatch):
        ours = getattr(swin, name)()
    assert_same_outputs(torch, theirs, ours, (1, 3, side, side), rtol=2e-4)


def test_bad_window_arguments_raise_torchvisions_error() -> None:
    with pytest.raises(ValueError) as ours:
        swin.ShiftedWindowAttention(8, [3], [0, 0], 2)
    with pytest.raises(ValueError) as theirs:
        tv_swin.ShiftedWindowAttention(8, [3], [0, 0], 2)
    assert str(ours.value) == str(theirs.value)
