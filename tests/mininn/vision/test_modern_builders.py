"""Every mobilenet/efficientnet/regnet/convnext/vit/swin builder has torchvision's structure.

Keys, shapes and dtypes of the state dict, and the printed module tree (which shows each
layer's settings: eps, momentum, strides, groups, inplace, stochastic depth), equal real
torchvision 0.28's. Pretrained weights are refused with a message that says what to do.
"""

from __future__ import annotations

import pytest
from _model_parity import cheap_init, structure, torchvision_on_meta
from _torchvision import import_torchvision

import mininn.vision.models as models

torchvision = import_torchvision()
torch = pytest.importorskip("torch")

BUILDERS = [
    "mobilenet_v2",
    "mobilenet_v3_large",
    "mobilenet_v3_small",
    "efficientnet_b0",
    "efficientnet_b1",
    "efficientnet_b2",
    "efficientnet_b3",
    "efficientnet_b4",
    "efficientnet_b5",
    "efficientnet_b6",
    "efficientnet_b7",
    "efficientnet_v2_s",
    "efficientnet_v2_m",
    "efficientnet_v2_l",
    "regnet_y_400mf",
    "regnet_y_800mf",
    "regnet_y_1_6gf",
    "regnet_y_3_2gf",
    "regnet_y_8gf",
    "regnet_y_16gf",
    "regnet_y_32gf",
    "regnet_y_128gf",
    "regnet_x_400mf",
    "regnet_x_800mf",
    "regnet_x_1_6gf",
    "regnet_x_3_2gf",
    "regnet_x_8gf",
    "regnet_x_16gf",
    "regnet_x_32gf",
    "convnext_tiny",
    "convnext_small",
    "convnext_base",
    "convnext_large",
    "vit_b_16",
    "vit_b_32",
    "vit_l_16",
    "vit_l_32",
    "vit_h_14",
    "swin_t",
    "swin_s",
    "swin_b",
    "swin_v2_t",
    "swin_v2_s",
    "swin_v2_b",
]


def test_every_builder_of_these_families_is_covered() -> None:
    families = ("mobilenet", "efficientnet", "regnet", "convnext", "vit_", "swin")
    theirs = {
        name
        for name in torchvision.models.list_models(module=torchvision.models)
        if name.startswith(families)
    }
    assert theirs == set(BUILDERS)


@pytest.mark.parametrize("name", BUILDERS)
def test_builder_matches_torchvision_keys_shapes_and_layers(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = torchvision_on_meta(torch, getattr(torchvision.models, name))
    with cheap_init(monkeypatch):
        model = getattr(models, name)()
    assert structure(model.state_dict()) == structure(expected.state_dict())
    assert repr(model) == repr(expected)


@pytest.mark.parametrize(
    "name",
    ["mobilenet_v3_small", "efficientnet_b5", "regnet_x_400mf", "convnext_tiny", "vit_b_32", "swin_v2_t"],
)
def test_builder_passes_keyword_arguments_to_the_model(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = torchvision_on_meta(torch, getattr(torchvision.models, name), num_classes=7)
    with cheap_init(monkeypatch):
        model = getattr(models, name)(num_classes=7)
    assert structure(model.state_dict()) == structure(expected.state_dict())
    assert repr(model) == repr(expected)


@pytest.mark.parametrize("name", BUILDERS)
def test_pretrained_weights_are_refused_with_what_to_do(name: str) -> None:
    builder = getattr(models, name)
    with pytest.raises(ValueError, match=rf"^{name}\(weights='DEFAULT'\): mininn does not download") as info:
        builder(weights="DEFAULT")
    assert f"{name}(weights=None)" in str(info.value)
    assert "state_dict" in str(info.value)
    with (
        pytest.raises(ValueError, match=rf"^{name}\(pretrained=True\)"),
        pytest.warns(UserWarning, match="deprecated"),
    ):
        builder(pretrained=True)


def test_pretrained_false_builds_the_model_with_torchvisions_warnings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.warns(UserWarning) as theirs:
        torchvision_on_meta(torch, torchvision.models.mobilenet_v3_small, pretrained=False)
    with cheap_init(monkeypatch), pytest.warns(UserWarning) as ours:
        model = models.mobilenet_v3_small(pretrained=False, num_classes=3)
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]
    assert {w.filename for w in ours} == {__file__}  # they point at the line that called the builder
    assert model.classifier[3].out_features == 3


def test_builders_take_weights_only_by_keyword() -> None:
    with pytest.raises(TypeError):
        models.convnext_tiny(None)
