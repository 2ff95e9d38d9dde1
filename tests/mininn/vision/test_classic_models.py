"""torchvision's classic families on mininn (ResNet, ResNeXt, Wide ResNet, VGG, DenseNet, SqueezeNet,
ShuffleNet V2) against real torchvision 0.28: state-dict keys and shapes of every builder, outputs on
the same weights, initialisation, constructor arguments and the refusal of pretrained weights.

Building every mininn model with its random initialisation would draw ~1.5 billion numbers, so the
key/shape test builds them with the draws replaced by no-ops (:func:`cheap_init`); initialisation
itself is tested on the small members.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from _torchvision import import_torchvision

import mininn
import mininn.vision as vision
from mininn import nn

tv = import_torchvision()
torch = pytest.importorskip("torch")

BUILDERS = [
    "resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
    "resnext50_32x4d", "resnext101_32x8d", "resnext101_64x4d", "wide_resnet50_2", "wide_resnet101_2",
    "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn",
    "densenet121", "densenet161", "densenet169", "densenet201",
    "squeezenet1_0", "squeezenet1_1",
    "shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "shufflenet_v2_x1_5", "shufflenet_v2_x2_0",
]
_DRAWS = ("uniform_", "normal_", "kaiming_uniform_", "kaiming_normal_", "trunc_normal_")


@pytest.fixture
def cheap_init(monkeypatch: pytest.MonkeyPatch) -> None:
    """mininn's random initialisers as no-ops: the structure is built, nothing is drawn."""
    for name in _DRAWS:
        monkeypatch.setattr(nn.init, name, lambda tensor, *args, **kwargs: tensor)


def torch_model(name: str, **kwargs: Any) -> Any:
    torch.manual_seed(0)
    return getattr(tv.models, name)(**kwargs).eval()


def load_torch_weights(model: nn.Module, reference: Any) -> None:
    state = {k: mininn.tensor(v.detach().numpy()) for k, v in reference.state_dict().items()}
    missing, unexpected = model.load_state_dict(state, strict=True)
    assert missing == [] and unexpected == []


def _randomise_batch_norms(reference: Any) -> None:
    """Non-trivial running statistics and affine values, so eval-mode norms are really compared."""
    generator = torch.Generator().manual_seed(3)
    for module in reference.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            n = module.num_features
            module.running_mean.copy_(torch.randn(n, generator=generator) * 0.1)
            module.running_var.copy_(torch.rand(n, generator=generator) + 0.5)
            module.weight.data.copy_(torch.rand(n, generator=generator) + 0.5)
            module.bias.data.copy_(torch.randn(n, generator=generator) * 0.1)


@pytest.mark.parametrize("name", BUILDERS)
def test_every_builder_has_torchvisions_state_dict_keys_and_shapes(name: str, cheap_init: None) -> None:
    with torch.device("meta"):
        reference = getattr(tv.models, name)()
    expected = [(k, tuple(v.shape)) for k, v in reference.state_dict().items()]
    model = getattr(vision.models, name)()
    assert [(k, tuple(v.shape)) for k, v in model.state_dict().items()] == expected
    assert type(model).__name__ == type(reference).__name__
    assert [n for n, _ in model.named_modules()] == [n for n, _ in reference.named_modules()]


@pytest.mark.parametrize(("name", "size"), [
    ("resnet18", 64), ("resnext50_32x4d", 64), ("vgg11_bn", 64), ("densenet121", 64),
    ("squeezenet1_1", 64), ("squeezenet1_0", 64), ("shufflenet_v2_x0_5", 64),
])
def test_outputs_equal_torchvision_on_the_same_weights_in_eval_mode(name: str, size: int,
                                                                    cheap_init: None) -> None:
    reference = torch_model(name)
    _randomise_batch_norms(reference)
    model = getattr(vision.models, name)().eval()
    load_torch_weights(model, reference)
    x = np.random.default_rng(0).standard_normal((2, 3, size, size)).astype(np.float32)
    with torch.no_grad():
        expected = reference(torch.from_numpy(x)).numpy()
    with mininn.no_grad():
        got = model(mininn.tensor(x)).numpy()
    scale = float(np.abs(expected).max())
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5 * max(scale, 1.0))


@pytest.mark.parametrize("name", ["resnet18", "resnet50"])
def test_forward_hooks_fire_in_torchvisions_order(name: str, cheap_init: None) -> None:
    reference = torch_model(name)
    model = getattr(vision.models, name)().eval()
    load_torch_weights(model, reference)

    def record(net: Any, seen: list[str]) -> None:
        for name, module in net.named_modules():
            module.register_forward_hook(lambda *_, name=name: seen.append(name))

    torch_seen: list[str] = []
    mininn_seen: list[str] = []
    record(reference, torch_seen)
    record(model, mininn_seen)
    x = np.zeros((1, 3, 32, 32), np.float32)
    with torch.no_grad():
        reference(torch.from_numpy(x))
    with mininn.no_grad():
        model(mininn.tensor(x))
    assert mininn_seen == torch_seen


def test_dilated_resnet_with_a_custom_norm_layer_matches_torchvision() -> None:
    kwargs = {"replace_stride_with_dilation": [False, True, True], "num_classes": 7}
    reference = torch_model("resnet50", norm_layer=lambda c: torch.nn.GroupNorm(8, c), **kwargs)
    model = vision.models.resnet50(norm_layer=lambda c: nn.GroupNorm(8, c), **kwargs).eval()
    load_torch_weights(model, reference)
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)
    with torch.no_grad():
        expected = reference(torch.from_numpy(x)).numpy()
    with mininn.no_grad():
        got = model(mininn.tensor(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    assert model.layer4[0].conv2.dilation == (2, 2) and model.layer4[1].conv2.dilation == (4, 4)


def _values(t: Any) -> np.ndarray:
    return t.detach().numpy()


def test_resnet_initialisation_follows_torchvision() -> None:
    model = vision.models.resnet18(zero_init_residual=True)
    conv = model.layer3[0].conv2.weight  # fan_out = 256 * 9
    assert math.isclose(float(_values(conv).std()), math.sqrt(2.0 / (256 * 9)), rel_tol=0.05)
    assert np.all(_values(model.bn1.weight) == 1) and np.all(_values(model.bn1.bias) == 0)
    assert np.all(_values(model.layer1[0].bn2.weight) == 0)  # zero_init_residual
    assert np.all(_values(model.layer1[0].bn1.weight) == 1)
    fc_bound = 1 / math.sqrt(512)  # nn.Linear's own default
    assert np.abs(_values(model.fc.weight)).max() <= fc_bound
    bottleneck = vision.models.resnet50(zero_init_residual=True).layer2[1]
    assert np.all(_values(bottleneck.bn3.weight) == 0) and np.all(_values(bottleneck.bn2.weight) == 1)


def test_vgg_densenet_and_squeezenet_initialisation_follows_torchvision(
        monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: list[tuple[str, tuple[int, ...], dict[str, Any]]] = []
    for name in _DRAWS:
        def spy(tensor: Any, *args: Any, _name: str = name, **kwargs: Any) -> Any:
            drawn.append((_name, tuple(tensor.shape), {"args": args, **kwargs}))
            return tensor
        monkeypatch.setattr(nn.init, name, spy)
    vgg = vision.models.vgg11_bn()
    last = [d for d in drawn if d[1] == (1000, 4096)][-1]
    assert last == ("normal_", (1000, 4096), {"args": (0, 0.01)})
    first_conv = [d for d in drawn if d[1] == (64, 3, 3, 3)][-1]
    assert first_conv == ("kaiming_normal_", (64, 3, 3, 3),
                          {"args": (), "mode": "fan_out", "nonlinearity": "relu"})
    assert np.all(_values(vgg.features[0].bias) == 0) and np.all(_values(vgg.classifier[6].bias) == 0)
    drawn.clear()
    dense = vision.models.densenet121()
    assert [d for d in drawn if d[1] == (64, 3, 7, 7)][-1] == ("kaiming_normal_", (64, 3, 7, 7), {"args": ()})
    assert np.all(_values(dense.classifier.bias) == 0)
    drawn.clear()
    squeeze = vision.models.squeezenet1_1(num_classes=10)
    assert [d for d in drawn if d[1] == (10, 512, 1, 1)][-1] == ("normal_", (10, 512, 1, 1),
                                                                 {"args": (), "mean": 0.0, "std": 0.01})
    first = [d for d in drawn if d[1] == (64, 3, 3, 3)][-1]
    assert first == ("kaiming_uniform_", (64, 3, 3, 3), {"args": ()})
    assert np.all(_values(squeeze.features[0].bias) == 0)


def test_vgg_without_init_weights_keeps_the_layers_defaults(cheap_init: None) -> None:
    model = vision.models.vgg11(init_weights=False, num_classes=3, dropout=0.2)
    assert model.classifier[6].out_features == 3 and model.classifier[2].p == 0.2


def test_resnext_and_wide_resnet_fix_their_widths_as_torchvision(cheap_init: None) -> None:
    with pytest.raises(ValueError, match="The parameter 'groups' expected value 32 but got 8 instead."):
        vision.models.resnext50_32x4d(groups=8)
    with pytest.raises(ValueError, match="The parameter 'width_per_group' expected value 128 but got 64"):
        vision.models.wide_resnet50_2(width_per_group=64)
    assert vision.models.resnext50_32x4d(groups=32).layer1[0].conv2.groups == 32


def test_bad_constructor_arguments_raise_torchvisions_errors() -> None:
    with pytest.raises(ValueError, match="replace_stride_with_dilation should be None or a 3-element tuple"):
        vision.models.resnet18(replace_stride_with_dilation=[True])
    with pytest.raises(ValueError, match="BasicBlock only supports groups=1 and base_width=64"):
        vision.models.resnet18(groups=2)
    with pytest.raises(NotImplementedError, match="Dilation > 1 not supported in BasicBlock"):
        vision.models.resnet18(replace_stride_with_dilation=[False, False, True])
    with pytest.raises(ValueError, match="Unsupported SqueezeNet version 2_0: 1_0 or 1_1 expected"):
        vision.models.SqueezeNet("2_0")
    with pytest.raises(ValueError, match="expected stages_repeats as list of 3 positive ints"):
        vision.models.ShuffleNetV2([4, 8], [24, 48, 96, 192, 1024])
    with pytest.raises(ValueError, match="expected stages_out_channels as list of 5 positive ints"):
        vision.models.ShuffleNetV2([4, 8, 4], [24, 48, 96, 192])


@pytest.mark.parametrize("weights", ["IMAGENET1K_V1", "DEFAULT", object()])
def test_pretrained_weights_are_refused_with_the_builder_named(weights: Any) -> None:
    with pytest.raises(ValueError) as error:
        vision.models.resnet50(weights=weights)
    message = str(error.value)
    assert message.startswith(f"resnet50(weights={weights!r}): mininn does not download pretrained weights")
    assert "resnet50(weights=None)" in message and "state_dict" in message


def test_pretrained_true_is_refused_after_torchvisions_deprecation_warning() -> None:
    with pytest.warns(UserWarning, match="The parameter 'pretrained' is deprecated"), \
            pytest.raises(ValueError, match=r"^resnet18\(pretrained=True\): mininn does not"):
        vision.models.resnet18(pretrained=True)


@pytest.mark.parametrize("name", [
    "vgg16", "densenet121", "squeezenet1_0", "shufflenet_v2_x1_0", "wide_resnet50_2"])
def test_every_family_refuses_weights(name: str) -> None:
    with pytest.raises(ValueError, match=f"^{name}\\(weights='DEFAULT'\\)"):
        getattr(vision.models, name)(weights="DEFAULT")


def test_pretrained_false_builds_with_torchvisions_deprecation_warnings() -> None:
    with pytest.warns(UserWarning) as caught:
        model = vision.models.squeezenet1_1(pretrained=False, num_classes=4)
    with pytest.warns(UserWarning) as torch_caught:
        tv.models.squeezenet1_1(pretrained=False, num_classes=4)
    assert [str(w.message) for w in caught] == [str(w.message) for w in torch_caught]
    assert model.num_classes == 4


def test_dense_layer_takes_a_tensor_or_a_list_as_torchvisions() -> None:
    reference = torch_model("densenet121")
    model = vision.models.densenet121().eval()
    load_torch_weights(model, reference)
    x = np.random.default_rng(2).standard_normal((1, 64, 8, 8)).astype(np.float32)
    layer, torch_layer = model.features.denseblock1.denselayer1, reference.features.denseblock1.denselayer1
    with torch.no_grad():
        expected = torch_layer(torch.from_numpy(x)).numpy()
        expected_list = torch_layer([torch.from_numpy(x)]).numpy()
    with mininn.no_grad():
        np.testing.assert_allclose(layer(mininn.tensor(x)).numpy(), expected, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(layer([mininn.tensor(x)]).numpy(), expected_list, rtol=1e-4, atol=1e-5)


def test_training_mode_updates_batch_norm_statistics_as_torchvision() -> None:
    reference = torch_model("shufflenet_v2_x0_5").train()
    model = vision.models.shufflenet_v2_x0_5().train()
    load_torch_weights(model, reference)
    x = np.random.default_rng(4).standard_normal((4, 3, 64, 64)).astype(np.float32)
    reference(torch.from_numpy(x)).sum().backward()
    model(mininn.tensor(x)).sum().backward()
    np.testing.assert_allclose(model.conv5[1].running_var.numpy(), reference.conv5[1].running_var.numpy(),
                               rtol=1e-3, atol=1e-6)
    np.testing.assert_allclose(model.fc.weight.grad.numpy(), reference.fc.weight.grad.numpy(),
                               rtol=1e-3, atol=1e-5)


def _iter_names() -> Iterator[str]:
    yield from BUILDERS
    yield from ("ResNet", "BasicBlock", "Bottleneck", "VGG", "DenseNet", "SqueezeNet", "ShuffleNetV2")


def test_every_name_is_exported_from_torchvision_models() -> None:
    for name in _iter_names():
        assert name in vision.models.__all__, name
        assert getattr(vision.models, name) is not None


def test_weights_enums_have_torchvisions_members_and_builders_refuse_them() -> None:
    enums = {tv.models.get_model_weights(builder).__name__ for builder in BUILDERS}  # one per builder
    assert len(enums) == len(BUILDERS) and enums <= set(vision.models.__all__)
    for name in sorted(enums):
        ours, theirs = getattr(vision.models, name), getattr(tv.models, name)
        assert list(ours.__members__) == list(theirs.__members__), name
        assert ours.DEFAULT.name == theirs.DEFAULT.name, name
    with pytest.raises(ValueError, match=r"^resnet50\(weights=ResNet50_Weights.IMAGENET1K_V2\)"):
        vision.models.resnet50(weights=vision.models.ResNet50_Weights.DEFAULT)


def test_intermediate_layer_getter_returns_torchvisions_features(cheap_init: None) -> None:
    from mininn.vision.models._utils import IntermediateLayerGetter

    reference = torch_model("resnet18")
    _randomise_batch_norms(reference)
    model = vision.models.resnet18().eval()
    load_torch_weights(model, reference)
    layers = {"layer2": "mid", "layer4": "0"}
    ours = IntermediateLayerGetter(model, layers)
    theirs = tv.models._utils.IntermediateLayerGetter(reference, layers)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert list(ours) == list(theirs)  # children up to layer4: no avgpool, no fc
    x = np.random.default_rng(5).standard_normal((1, 3, 64, 64)).astype(np.float32)
    with torch.no_grad():
        expected = theirs(torch.from_numpy(x))
    with mininn.no_grad():
        got = ours(mininn.tensor(x))
    assert list(got) == list(expected) == ["mid", "0"]
    for key in got:
        # float32 sums over 18 layers round differently from torch's: absolute error scales with the
        # feature map's magnitude (as in the whole-model comparison above)
        scale = float(np.abs(expected[key].numpy()).max())
        np.testing.assert_allclose(got[key].numpy(), expected[key].numpy(), rtol=1e-4,
                                   atol=1e-5 * max(scale, 1.0))
    with pytest.raises(ValueError, match="return_layers are not present in model"):
        IntermediateLayerGetter(model, {"layer2.0": "x"})
