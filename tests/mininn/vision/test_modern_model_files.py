"""Model files written for torch and torchvision, loaded with ``load_code``, build on mininn.vision.

The file below imports as users write it (``torchvision.models``, ``torchvision.ops``, the
weights enums, a family's own module) and gives torch's outputs on the same weights.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from _torchvision import import_torchvision

import mininn
from mininn.torch_alias import load_code

MODEL_FILE = """
import torch
import torch.nn as nn
import torchvision
from torchvision.models import EfficientNet_B0_Weights, efficientnet_b0
from torchvision.models.mobilenetv2 import InvertedResidual
from torchvision.ops import MLP, Conv2dNormActivation, SqueezeExcitation, StochasticDepth
from torchvision.ops.misc import Permute


class Net(nn.Module):
    def __init__(self, num_classes=4, pretrained=False):
        super().__init__()
        weights = EfficientNet_B0_Weights.DEFAULT if pretrained else None
        self.backbone = efficientnet_b0(weights=weights).features[:3]
        self.block = InvertedResidual(24, 24, 1, expand_ratio=2)
        self.stem = Conv2dNormActivation(24, 16, kernel_size=1)
        self.se = SqueezeExcitation(16, 4)
        self.drop = StochasticDepth(0.5, "row")
        self.to_tokens = Permute([0, 2, 3, 1])
        self.head = MLP(16, [32, num_classes], dropout=0.1)
        self.vit = torchvision.models.vision_transformer.VisionTransformer(
            image_size=16, patch_size=8, num_layers=1, num_heads=2, hidden_dim=8, mlp_dim=8, num_classes=3)

    def forward(self, x):
        y = self.se(self.stem(self.block(self.backbone(x))))
        y = self.drop(y).mean(dim=(2, 3))
        return torch.cat([self.head(y), self.vit(x[:, :, :16, :16])], dim=1)
"""


def _load(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "model.py").write_text(MODEL_FILE)
    return folder


def test_torchvision_model_file_serves_torchs_outputs(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    import_torchvision()
    path = _load(tmp_path, "torch_side") / "model.py"  # the same file under the real torch and torchvision
    spec = importlib.util.spec_from_file_location("tv_modern_reference_model", path)
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    torch.manual_seed(0)
    theirs = reference.Net().eval()
    ours = load_code(_load(tmp_path, "served"), "model.py").Net().eval()
    state = theirs.state_dict()
    assert list(ours.state_dict()) == list(state)
    ours.load_state_dict({k: mininn.from_numpy(v.numpy().copy()) for k, v in state.items()})
    x = np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32)
    with torch.no_grad():
        expected = theirs(torch.from_numpy(x)).numpy()
    with mininn.no_grad():
        got = ours(mininn.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_asking_for_pretrained_weights_in_a_model_file_says_to_upload(tmp_path: Path) -> None:
    module = load_code(_load(tmp_path, "pretrained"), "model.py")
    with pytest.raises(
        ValueError,
        match=r"efficientnet_b0\(weights=EfficientNet_B0_Weights.IMAGENET1K_V1\): "
        r"mininn does not download",
    ):
        module.Net(pretrained=True)


def test_weights_enums_name_torchvisions_weights() -> None:
    torchvision = import_torchvision()
    from torchvision.models._api import WeightsEnum

    import mininn.vision.models as ours

    theirs = {n: getattr(torchvision.models, n) for n in dir(torchvision.models)}
    families = ("MobileNet_", "EfficientNet_", "RegNet_", "ConvNeXt_", "ViT_", "Swin_")
    expected = {
        n: e
        for n, e in theirs.items()
        if isinstance(e, type) and issubclass(e, WeightsEnum) and n.startswith(families)
    }
    assert len(expected) == 44
    for name, enum in expected.items():
        mine = getattr(ours, name)
        assert list(mine.__members__) == list(enum.__members__)
        assert mine.DEFAULT.name == enum.DEFAULT.name
        assert repr(mine.DEFAULT) == f"{name}.{enum.DEFAULT.name}"


def test_weights_enum_members_refuse_what_needs_a_download() -> None:
    from mininn.vision.models import MobileNet_V2_Weights, mobilenet_v2

    with pytest.raises(RuntimeError, match="mininn does not download pretrained weights"):
        MobileNet_V2_Weights.DEFAULT.get_state_dict(progress=False)
    with pytest.raises(RuntimeError, match="torchvision.transforms"):
        MobileNet_V2_Weights.IMAGENET1K_V1.transforms()
    with pytest.raises(ValueError, match=r"^mobilenet_v2\(weights=MobileNet_V2_Weights.IMAGENET1K_V2\)"):
        mobilenet_v2(weights=MobileNet_V2_Weights.DEFAULT)
