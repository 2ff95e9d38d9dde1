"""``mlp`` against torchvision.ops.MLP (reproduced in torch below)."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
import models
from models import ArchitectureError

torch = pytest.importorskip("torch")


class TorchvisionMLP(torch.nn.Sequential):
    """torchvision.ops.MLP without a norm layer, as torchvision writes it."""

    def __init__(self, in_channels, hidden_channels, activation_layer=torch.nn.ReLU, dropout=0.0):
        layers = []
        in_dim = in_channels
        for hidden_dim in hidden_channels[:-1]:
            layers.append(torch.nn.Linear(in_dim, hidden_dim, bias=True))
            layers.append(activation_layer())
            layers.append(torch.nn.Dropout(dropout))
            in_dim = hidden_dim
        layers.append(torch.nn.Linear(in_dim, hidden_channels[-1], bias=True))
        layers.append(torch.nn.Dropout(dropout))
        super().__init__(*layers)


ACTIVATIONS = {"relu": torch.nn.ReLU, "gelu": torch.nn.GELU,
               "tanh": torch.nn.Tanh, "sigmoid": torch.nn.Sigmoid}


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_mlp_matches_torchvision_layout_and_outputs(activation, load_torch_state):
    torch.manual_seed(0)
    reference = TorchvisionMLP(12, [16, 8, 5], ACTIVATIONS[activation], dropout=0.25).eval()
    model = models.create("mlp", in_features=12, hidden_sizes=[16, 8], out_features=5, activation=activation,
                          dropout=0.25).eval()
    load_torch_state(model, reference)
    assert [name for name, _ in model.named_modules()] == [name for name, _ in reference.named_modules()]
    x = np.random.default_rng(1).standard_normal((4, 12)).astype(np.float32)
    with mininn.no_grad():
        got = model(mininn.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, reference(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_mlp_without_hidden_layers_is_linear_then_dropout():
    model = models.create("mlp", in_features=3, hidden_sizes=[], out_features=2)
    assert list(model.state_dict()) == ["0.weight", "0.bias"]
    assert type(model[1]).__name__ == "Dropout"


def test_mlp_servable_predicts_output_of_declared_shape():
    servable = models.servable("mlp", {"in_features": 6, "hidden_sizes": [4], "out_features": 3})
    inputs = servable.example_inputs(batch_size=2)
    assert inputs["input"].shape == (2, 6) and inputs["input"].dtype == np.float32
    with mininn.no_grad():
        outputs = servable.predict(inputs)
    assert list(outputs) == ["output"]
    assert outputs["output"].shape == (2, 3) and outputs["output"].dtype == np.float32


def test_mlp_rejects_non_positive_sizes():
    expected = r"config key 'hidden_sizes' of architecture 'mlp': expected a list of positive integers"
    with pytest.raises(ArchitectureError, match=expected):
        models.create("mlp", hidden_sizes=[4, 0])
