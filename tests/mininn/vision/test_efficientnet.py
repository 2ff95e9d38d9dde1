"""EfficientNet V1/V2 on mininn against torchvision: outputs on the same weights, stochastic depth, errors."""

from __future__ import annotations

import numpy as np
import pytest
from _model_parity import assert_same_gradients, assert_same_outputs, cheap_init
from _torchvision import import_torchvision

import mininn
from mininn.vision.models import efficientnet

torchvision = import_torchvision()
torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["efficientnet_b0", "efficientnet_v2_s"])
def test_outputs_equal_torchvision_in_eval(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    theirs = getattr(torchvision.models, name)(num_classes=10)
    with cheap_init(monkeypatch):
        ours = getattr(efficientnet, name)(num_classes=10)
    assert_same_outputs(torch, theirs, ours, (2, 3, 64, 64))


@pytest.mark.parametrize("name", ["efficientnet_b0", "efficientnet_v2_s"])
def test_gradients_equal_torchvision_in_training(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    kwargs = dict(num_classes=3, stochastic_depth_prob=0.0, dropout=0.0)
    theirs = getattr(torchvision.models, name)(**kwargs)
    with cheap_init(monkeypatch):
        ours = getattr(efficientnet, name)(**kwargs)
    assert_same_gradients(torch, theirs, ours, (4, 3, 64, 64), rtol=1e-3)


def test_stochastic_depth_grows_with_block_index_as_torchvisions() -> None:
    def probabilities(model: object) -> list[float]:
        return [m.p for m in model.modules() if type(m).__name__ == "StochasticDepth"]

    with torch.device("meta"):
        theirs = torchvision.models.efficientnet_b0(stochastic_depth_prob=0.4)
    ours = efficientnet.efficientnet_b0(stochastic_depth_prob=0.4)
    assert probabilities(ours) == probabilities(theirs)
    assert probabilities(ours)[0] == 0.0 and max(probabilities(ours)) < 0.4


def test_residual_branch_is_dropped_in_training_and_kept_in_eval() -> None:
    cnf = efficientnet.MBConvConfig(4, 3, 1, 8, 8, 1)
    block = efficientnet.MBConv(cnf, 1.0, mininn.nn.BatchNorm2d)
    x = mininn.randn(2, 8, 5, 5)
    with mininn.no_grad():
        np.testing.assert_array_equal(block.train()(x).numpy(), x.numpy())  # branch dropped: x + 0
        assert not np.allclose(block.eval()(x).numpy(), x.numpy())


def _message(call: object, *args: object, **kwargs: object) -> tuple[type, str]:
    try:
        call(*args, **kwargs)  # type: ignore[operator]
    except Exception as error:  # noqa: BLE001 - the test compares whatever is raised
        return type(error), str(error)
    raise AssertionError("no error raised")


def test_bad_settings_raise_torchvisions_errors() -> None:
    tv = torchvision.models.efficientnet
    assert _message(efficientnet.EfficientNet, [], 0.2) == _message(tv.EfficientNet, [], 0.2)
    assert _message(efficientnet.EfficientNet, [(1, 3)], 0.2) == _message(tv.EfficientNet, [(1, 3)], 0.2)
    ours_cnf = efficientnet.MBConvConfig(1, 3, 3, 16, 16, 1)
    theirs_cnf = tv.MBConvConfig(1, 3, 3, 16, 16, 1)
    assert _message(efficientnet.MBConv, ours_cnf, 0.0, mininn.nn.BatchNorm2d) == _message(
        tv.MBConv, theirs_cnf, 0.0, torch.nn.BatchNorm2d
    )
    fused_ours = efficientnet.FusedMBConvConfig(1, 3, 0, 16, 16, 1)
    fused_theirs = tv.FusedMBConvConfig(1, 3, 0, 16, 16, 1)
    assert _message(efficientnet.FusedMBConv, fused_ours, 0.0, mininn.nn.BatchNorm2d) == _message(
        tv.FusedMBConv, fused_theirs, 0.0, torch.nn.BatchNorm2d
    )


@pytest.mark.parametrize(
    ("arch", "kwargs"),
    [("efficientnet_b3", {"width_mult": 1.2, "depth_mult": 1.4}), ("efficientnet_v2_m", {})],
)
def test_private_conf_helper_gives_torchvisions_stages(arch: str, kwargs: dict) -> None:
    ours, ours_last = efficientnet._efficientnet_conf(arch, **kwargs)
    theirs, theirs_last = torchvision.models.efficientnet._efficientnet_conf(arch, **kwargs)
    assert ours_last == theirs_last
    fields = ("expand_ratio", "kernel", "stride", "input_channels", "out_channels", "num_layers")
    assert [[getattr(c, f) for f in fields] + [c.block.__name__] for c in ours] == [
        [getattr(c, f) for f in fields] + [c.block.__name__] for c in theirs
    ]
    with pytest.raises(ValueError, match="^Unsupported model type efficientnet_x$"):
        efficientnet._efficientnet_conf("efficientnet_x")
