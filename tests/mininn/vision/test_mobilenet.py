"""MobileNetV2 and V3 on mininn against torchvision: outputs on the same weights, options and errors."""

from __future__ import annotations

import pytest
from _model_parity import assert_same_outputs, cheap_init, structure
from _torchvision import import_torchvision

from mininn.vision.models import mobilenetv2, mobilenetv3

torchvision = import_torchvision()
torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large"])
def test_outputs_equal_torchvision_in_eval(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    theirs = getattr(torchvision.models, name)(num_classes=10)
    with cheap_init(monkeypatch):
        ours = getattr(mobilenetv2 if name == "mobilenet_v2" else mobilenetv3, name)(num_classes=10)
    assert_same_outputs(torch, theirs, ours, (2, 3, 64, 64))


def test_mobilenet_v2_width_and_rounding_options_match(monkeypatch: pytest.MonkeyPatch) -> None:
    kwargs = {"width_mult": 0.35, "round_nearest": 4, "dropout": 0.5}
    with cheap_init(monkeypatch):
        ours = mobilenetv2.MobileNetV2(**kwargs)
    theirs = torchvision.models.MobileNetV2(**kwargs)
    assert structure(ours.state_dict()) == structure(theirs.state_dict())
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("kwargs", [{"reduced_tail": True}, {"dilated": True}, {"width_mult": 0.75}])
def test_mobilenet_v3_options_match(kwargs: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    with cheap_init(monkeypatch):
        ours = mobilenetv3.mobilenet_v3_large(**kwargs)
    theirs = torchvision.models.mobilenet_v3_large(**kwargs)
    assert structure(ours.state_dict()) == structure(theirs.state_dict())
    assert repr(ours) == repr(theirs)


def test_dilated_mobilenet_v3_outputs_match(monkeypatch: pytest.MonkeyPatch) -> None:
    theirs = torchvision.models.mobilenet_v3_small(dilated=True, reduced_tail=True, num_classes=5)
    with cheap_init(monkeypatch):
        ours = mobilenetv3.mobilenet_v3_small(dilated=True, reduced_tail=True, num_classes=5)
    assert_same_outputs(torch, theirs, ours, (1, 3, 48, 48))


def _message(call: object, *args: object, **kwargs: object) -> tuple[type, str]:
    try:
        call(*args, **kwargs)  # type: ignore[operator]
    except Exception as error:  # noqa: BLE001 - the test compares whatever is raised
        return type(error), str(error)
    raise AssertionError("no error raised")


def test_bad_settings_raise_torchvisions_errors() -> None:
    assert _message(mobilenetv2.MobileNetV2, inverted_residual_setting=[[1, 16, 1]]) == _message(
        torchvision.models.MobileNetV2, inverted_residual_setting=[[1, 16, 1]]
    )
    assert _message(mobilenetv2.InvertedResidual, 8, 8, 3, 6) == _message(
        torchvision.models.mobilenetv2.InvertedResidual, 8, 8, 3, 6
    )
    assert _message(mobilenetv3.MobileNetV3, [], 1024) == _message(torchvision.models.MobileNetV3, [], 1024)
    assert _message(mobilenetv3.MobileNetV3, [[16]], 1024) == _message(
        torchvision.models.MobileNetV3, [[16]], 1024
    )
    assert _message(mobilenetv3._mobilenet_v3_conf, "mobilenet_v3_tiny") == _message(
        torchvision.models.mobilenetv3._mobilenet_v3_conf, "mobilenet_v3_tiny"
    )


def test_training_mode_output_differs_from_eval_through_dropout(monkeypatch: pytest.MonkeyPatch) -> None:
    import mininn

    model = mobilenetv3.mobilenet_v3_small(num_classes=4, dropout=0.9)
    x = mininn.randn(2, 3, 32, 32)
    with mininn.no_grad():
        model.eval()
        first, second = model(x).numpy(), model(x).numpy()
        assert (first == second).all()
        model.train()
        assert not (model(x).numpy() == first).all()
