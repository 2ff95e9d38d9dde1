"""RegNet X/Y on mininn against torchvision: outputs on the same weights, stage widths, errors."""

from __future__ import annotations

import pytest
from _model_parity import assert_same_outputs, cheap_init
from _torchvision import import_torchvision

from mininn.vision.models import regnet

torchvision = import_torchvision()
torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["regnet_y_400mf", "regnet_x_400mf"])
def test_outputs_equal_torchvision_in_eval(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    theirs = getattr(torchvision.models, name)(num_classes=10)
    with cheap_init(monkeypatch):
        ours = getattr(regnet, name)(num_classes=10)
    assert_same_outputs(torch, theirs, ours, (2, 3, 64, 64))


@pytest.mark.parametrize(
    "settings",
    [
        dict(depth=16, w_0=48, w_a=27.89, w_m=2.09, group_width=8, se_ratio=0.25),
        dict(depth=13, w_0=24, w_a=36.44, w_m=2.49, group_width=8),
        dict(depth=30, w_0=64, w_a=11.1, w_m=2.7, group_width=12, bottleneck_multiplier=2.0),
    ],
)
def test_block_params_equal_torchvisions(settings: dict) -> None:
    ours = regnet.BlockParams.from_init_params(**settings)
    theirs = torchvision.models.regnet.BlockParams.from_init_params(**settings)
    assert vars(ours) == vars(theirs)


@pytest.mark.parametrize(
    "settings",
    [
        dict(depth=4, w_0=48, w_a=-1.0, w_m=2.0, group_width=8),
        dict(depth=4, w_0=0, w_a=1.0, w_m=2.0, group_width=8),
        dict(depth=4, w_0=48, w_a=1.0, w_m=1.0, group_width=8),
        dict(depth=4, w_0=50, w_a=1.0, w_m=2.0, group_width=8),
    ],
)
def test_invalid_settings_raise_torchvisions_error(settings: dict) -> None:
    with pytest.raises(ValueError, match="^Invalid RegNet settings$"):
        regnet.BlockParams.from_init_params(**settings)
    with pytest.raises(ValueError, match="^Invalid RegNet settings$"):
        torchvision.models.regnet.BlockParams.from_init_params(**settings)
