"""VisionTransformer on mininn against torchvision: outputs on the same weights, legacy keys, input checks."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from _model_parity import (
    assert_same_gradients,
    assert_same_outputs,
    cheap_init,
    structure,
    torchvision_on_meta,
)
from _torchvision import import_torchvision

import mininn
from mininn import nn
from mininn.vision.models import vision_transformer as vit

torchvision = import_torchvision()
torch = pytest.importorskip("torch")
tv_vit = torchvision.models.vision_transformer

SMALL = dict(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=16, mlp_dim=24, num_classes=5)


@pytest.mark.parametrize("extra", [{}, {"representation_size": 12}])
def test_small_configuration_outputs_equal_torchvision(extra: dict) -> None:
    torch.manual_seed(0)
    theirs = tv_vit.VisionTransformer(**SMALL, **extra)
    ours = vit.VisionTransformer(**SMALL, **extra)
    assert repr(ours) == repr(theirs)
    assert_same_outputs(torch, theirs, ours, (3, 3, 32, 32))


def test_small_configuration_gradients_equal_torchvision() -> None:
    torch.manual_seed(0)
    theirs, ours = tv_vit.VisionTransformer(**SMALL), vit.VisionTransformer(**SMALL)
    assert_same_gradients(torch, theirs, ours, (3, 3, 32, 32))


def test_convolutional_stem_outputs_equal_torchvision() -> None:
    theirs = tv_vit.VisionTransformer(
        **SMALL,
        conv_stem_configs=[
            tv_vit.ConvStemConfig(8, 3, 2),
            tv_vit.ConvStemConfig(12, 3, 4, activation_layer=torch.nn.Hardswish),
        ],
    )
    ours = vit.VisionTransformer(
        **SMALL,
        conv_stem_configs=[
            vit.ConvStemConfig(8, 3, 2),
            vit.ConvStemConfig(12, 3, 4, activation_layer=nn.Hardswish),
        ],
    )
    assert repr(ours) == repr(theirs)
    assert_same_outputs(torch, theirs, ours, (2, 3, 32, 32))


def test_norm_layer_and_dropout_arguments_reach_the_layers() -> None:
    kwargs = dict(SMALL, dropout=0.1, attention_dropout=0.2)
    theirs = tv_vit.VisionTransformer(**kwargs, norm_layer=partial(torch.nn.LayerNorm, eps=1e-5))
    ours = vit.VisionTransformer(**kwargs, norm_layer=partial(nn.LayerNorm, eps=1e-5))
    assert repr(ours) == repr(theirs)
    assert_same_outputs(torch, theirs, ours, (2, 3, 32, 32))


@pytest.mark.slow
def test_vit_b_16_outputs_equal_torchvision_at_224(monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    theirs = torchvision.models.vit_b_16()
    with cheap_init(monkeypatch):
        ours = vit.vit_b_16()
    assert_same_outputs(torch, theirs, ours, (1, 3, 224, 224), rtol=2e-4)


def test_vit_b_32_builder_takes_image_size(monkeypatch: pytest.MonkeyPatch) -> None:
    theirs = torchvision_on_meta(torch, torchvision.models.vit_b_32, image_size=64, num_classes=4)
    with cheap_init(monkeypatch):
        ours = vit.vit_b_32(image_size=64, num_classes=4)
    assert structure(ours.state_dict()) == structure(theirs.state_dict())
    assert ours.encoder.pos_embedding.shape == (1, 5, 768)
    assert ours.seq_length == theirs.seq_length == 5


def test_state_dict_with_legacy_mlp_keys_loads_as_in_torchvision() -> None:
    theirs = tv_vit.VisionTransformer(**SMALL)
    state = {
        key.replace("mlp.0.", "mlp.linear_1.").replace("mlp.3.", "mlp.linear_2."): value.numpy()
        for key, value in theirs.state_dict().items()
    }
    assert any("linear_1" in key for key in state)
    ours = vit.VisionTransformer(**SMALL)
    ours.load_state_dict({key: mininn.from_numpy(value) for key, value in state.items()})
    np.testing.assert_array_equal(
        ours.encoder.layers.encoder_layer_1.mlp[3].weight.detach().numpy(),
        theirs.encoder.layers.encoder_layer_1.mlp[3].weight.detach().numpy(),
    )


def test_init_follows_torchvision() -> None:
    model = vit.VisionTransformer(**SMALL)
    assert not model.heads.head.weight.detach().numpy().any()
    assert not model.class_token.detach().numpy().any()
    assert 0.01 < model.encoder.pos_embedding.detach().numpy().std() < 0.03
    mlp_bias = model.encoder.layers.encoder_layer_0.mlp[0].bias.detach().numpy()
    assert 0 < np.abs(mlp_bias).max() < 1e-5


def _message(call: object, *args: object, **kwargs: object) -> tuple[type, str]:
    try:
        call(*args, **kwargs)  # type: ignore[operator]
    except Exception as error:  # noqa: BLE001 - the test compares whatever is raised
        return type(error), str(error)
    raise AssertionError("no error raised")


def test_wrong_inputs_raise_torchvisions_errors() -> None:
    ours, theirs = vit.VisionTransformer(**SMALL), tv_vit.VisionTransformer(**SMALL)
    for shape in [(1, 3, 24, 32), (1, 3, 32, 40)]:
        x = np.zeros(shape, np.float32)
        assert _message(ours, mininn.from_numpy(x)) == _message(theirs, torch.from_numpy(x))
    bad = dict(SMALL, patch_size=7)
    assert _message(vit.VisionTransformer, **bad) == _message(tv_vit.VisionTransformer, **bad)
    assert _message(ours.encoder, mininn.zeros(2, 17))[0] is AssertionError


@pytest.mark.parametrize(("image_size", "reset_heads"), [(48, False), (48, True), (32, True)])
def test_interpolate_embeddings_equals_torchvisions(image_size: int, reset_heads: bool) -> None:
    from collections import OrderedDict

    theirs_state = tv_vit.VisionTransformer(**SMALL).state_dict()
    ours_state = OrderedDict((k, mininn.from_numpy(v.numpy().copy())) for k, v in theirs_state.items())
    expected = tv_vit.interpolate_embeddings(image_size, 8, theirs_state, reset_heads=reset_heads)
    got = vit.interpolate_embeddings(image_size, 8, ours_state, reset_heads=reset_heads)
    assert list(got) == list(expected)
    for key in expected:
        np.testing.assert_allclose(got[key].numpy(), expected[key].numpy(), rtol=1e-5, atol=1e-6)
    bigger = vit.VisionTransformer(**dict(SMALL, image_size=image_size))
    missing, unexpected = bigger.load_state_dict(got, strict=False)
    assert unexpected == [] and set(missing) == (
        {"heads.head.weight", "heads.head.bias"} if reset_heads and image_size != 32 else set()
    )


def test_interpolate_embeddings_rejects_what_torchvision_rejects() -> None:
    state = {"encoder.pos_embedding": mininn.zeros(2, 5, 4)}
    with pytest.raises(ValueError, match=r"^Unexpected position embedding shape"):
        vit.interpolate_embeddings(32, 8, state)
    with pytest.raises(ValueError, match=r"^seq_length is not a perfect square!"):
        vit.interpolate_embeddings(32, 8, {"encoder.pos_embedding": mininn.zeros(1, 6, 4)})
