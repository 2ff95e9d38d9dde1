"""einops on mininn tensors (:mod:`mininn.einops`) and its torch layers as mininn modules, against torch."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mininn
import mininn.einops
from mininn.nn import einops_layers
from mininn.torch_alias import load_code

einops = pytest.importorskip("einops")
torch = pytest.importorskip("torch")
from einops.layers import torch as torch_layers  # noqa: E402 - after the importorskip of torch

TOL = dict(rtol=1e-5, atol=1e-6)


def _pair(shape: tuple[int, ...], seed: int = 0, dtype: Any = np.float32) -> tuple[Any, Any]:
    array = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return mininn.tensor(array), torch.from_numpy(array.copy())


def _same(ours: Any, theirs: Any) -> None:
    assert isinstance(ours, mininn.Tensor)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **TOL)


# -- functions ------------------------------------------------------------------------------------------

CALLS: dict[str, Callable[[Any], Any]] = {
    "rearrange-transpose": lambda x: einops.rearrange(x, "b c h w -> b h w c"),
    "rearrange-merge": lambda x: einops.rearrange(x, "b c h w -> b (c h w)"),
    "rearrange-patches": lambda x: einops.rearrange(x, "b c (h p) (w q) -> b (h w) (p q c)", p=2, q=3),
    "rearrange-split": lambda x: einops.rearrange(x, "b (g c) h w -> g b c h w", g=2),
    "rearrange-ellipsis": lambda x: einops.rearrange(x, "b ... w -> w ... b"),
    "rearrange-unit-axes": lambda x: einops.rearrange(x, "b c h w -> b 1 c h w ()"),
    "repeat-new-axis": lambda x: einops.repeat(x, "b c h w -> b r c h w", r=3),
    "repeat-tile": lambda x: einops.repeat(x, "b c h w -> b c (h h2) (w2 w)", h2=2, w2=2),
    "reduce-mean": lambda x: einops.reduce(x, "b c h w -> b c", "mean"),
    "reduce-sum-pool": lambda x: einops.reduce(x, "b c (h h2) (w w2) -> b c h w", "sum", h2=2, w2=3),
    "reduce-max": lambda x: einops.reduce(x, "b c h w -> c w", "max"),
    "reduce-min": lambda x: einops.reduce(x, "b c h w -> b () h ()", "min"),
    "reduce-prod": lambda x: einops.reduce(x, "b c h w -> c", "prod"),
    "reduce-keep-ellipsis": lambda x: einops.reduce(x, "b ... w -> b w", "mean"),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_function_equals_torch(name: str) -> None:
    ours, theirs = _pair((2, 4, 4, 6))
    _same(CALLS[name](ours), CALLS[name](theirs))


@pytest.mark.parametrize("reduction", ["any", "all", "max", "min", "sum", "prod"])
def test_reductions_of_bool_and_int_tensors_equal_torch(reduction: str) -> None:
    array = np.random.default_rng(3).integers(0, 3, (3, 4, 5))
    for values in (array.astype(np.int64), array > 0):
        ours = einops.reduce(mininn.tensor(values), "a b c -> b", reduction)
        _same(ours, einops.reduce(torch.from_numpy(values), "a b c -> b", reduction))


def test_mean_of_an_int_tensor_is_refused_as_for_torch() -> None:
    values = np.arange(6).reshape(2, 3)
    with pytest.raises(NotImplementedError) as theirs:
        einops.reduce(torch.from_numpy(values), "a b -> a", "mean")
    with pytest.raises(NotImplementedError) as ours:
        einops.reduce(mininn.tensor(values), "a b -> a", "mean")
    assert str(ours.value) == str(theirs.value)


def test_callable_reduction_receives_the_mininn_tensor_and_axes() -> None:
    ours, theirs = _pair((2, 3, 4))
    expected = einops.reduce(theirs, "a b c -> b", torch.logsumexp)
    _same(einops.reduce(ours, "a b c -> b", mininn.logsumexp), expected)


def test_rearrange_of_a_list_stacks_it_first() -> None:
    (a, ta), (b, tb) = _pair((3, 4), 1), _pair((3, 4), 2)
    _same(einops.rearrange([a, b], "n h w -> h (n w)"), einops.rearrange([ta, tb], "n h w -> h (n w)"))


@pytest.mark.parametrize("pattern", ["b t c, c d -> b t d", "b t c, b s c -> b t s", "... c, c d -> ... d",
                                     "b t c, c d -> d"])
def test_einsum_equals_torch(pattern: str) -> None:
    x, tx = _pair((2, 3, 4), 4)
    second = (2, 5, 4) if "b s c" in pattern else (4, 5)
    w, tw = _pair(second, 5)
    _same(einops.einsum(x, w, pattern), einops.einsum(tx, tw, pattern))


def test_pack_and_unpack_equal_torch() -> None:
    (a, ta), (b, tb), (c, tc) = _pair((2, 3, 4), 1), _pair((2, 4), 2), _pair((2, 5, 6, 4), 3)
    packed, shapes = einops.pack([a, b, c], "b * d")
    torch_packed, torch_shapes = einops.pack([ta, tb, tc], "b * d")
    _same(packed, torch_packed)
    assert [tuple(s) for s in shapes] == [tuple(s) for s in torch_shapes] == [(3,), (), (5, 6)]
    for ours, theirs in zip(einops.unpack(packed, shapes, "b * d"), einops.unpack(torch_packed, torch_shapes,
                                                                                  "b * d")):
        _same(ours, theirs)


def test_parse_shape_and_asnumpy() -> None:
    x, tx = _pair((2, 3, 5))
    assert einops.parse_shape(x, "b _ w") == einops.parse_shape(tx, "b _ w") == {"b": 2, "w": 5}
    assert einops.parse_shape(x, "b ...") == {"b": 2}
    np.testing.assert_array_equal(einops.asnumpy(x), x.numpy())


@pytest.mark.parametrize(("call", "args"), [
    (einops.rearrange, ("a b c -> a (b c) d",)),
    (einops.rearrange, ("a (b x) c -> a b x c",)),
    (einops.rearrange, ("a b -> b a",)),
    (einops.repeat, ("a b c -> a b c r",)),
    (einops.reduce, ("a b c -> a", "median")),
])
def test_bad_pattern_raises_the_same_einops_error_as_for_torch(call: Callable[..., Any], args: tuple) -> None:
    x, tx = _pair((2, 3, 5))
    with pytest.raises(einops.EinopsError) as theirs:
        call(tx, *args)
    with pytest.raises(einops.EinopsError) as ours:
        call(x, *args)
    assert "mininn.Size([2, 3, 5])" in str(ours.value)  # the shape as mininn prints it; otherwise the same
    assert str(ours.value).replace("mininn.Size", "torch.Size") == str(theirs.value)


def test_gradients_flow_through_rearrange_repeat_reduce_and_einsum_as_in_torch() -> None:
    def run(x: Any, w: Any, backend: Any) -> Any:
        patches = einops.rearrange(x, "b c (h p) (w q) -> b (h w) (p q c)", p=2, q=2)
        tokens = einops.repeat(patches, "b n d -> b n r d", r=2)
        mixed = einops.einsum(tokens, w, "b n r d, d e -> b n e")
        packed, _ = einops.pack([mixed, einops.reduce(mixed, "b n e -> b e", "max")], "b * e")
        return (einops.reduce(packed, "b n e -> b", "mean") ** 2).sum()

    x, tx = _pair((2, 3, 4, 4), 1, np.float64)
    w, tw = _pair((12, 5), 2, np.float64)
    for tensor in (x, w, tx, tw):
        tensor.requires_grad_(True)
    ours, theirs = run(x, w, mininn), run(tx, tw, torch)
    ours.backward()
    theirs.backward()
    _same(ours, theirs)
    _same(x.grad, tx.grad)
    _same(w.grad, tw.grad)


def test_backend_is_einops_own_lookup_for_mininn_tensors_and_parameters() -> None:
    from einops._backends import get_backend

    backend = get_backend(mininn.nn.Parameter(mininn.zeros(2)))
    assert isinstance(backend, mininn.einops.MininnBackend) and backend.framework_name == "mininn"
    assert backend.is_float_type(mininn.zeros(1, dtype=mininn.bfloat16))
    assert not backend.is_float_type(mininn.zeros(1, dtype=mininn.int32))
    arange = backend.arange(2, 5)
    assert arange.dtype == mininn.int64 and arange.tolist() == [2, 3, 4]
    assert backend.from_numpy(np.zeros(2, np.float32)).requires_grad


# -- layers ---------------------------------------------------------------------------------------------

LAYERS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "Rearrange": (("b c (h p1) (w p2) -> b (h w) (p1 p2 c)",), {"p1": 2, "p2": 3}),
    "Reduce": (("b c (h h2) (w w2) -> b c h w", "max"), {"h2": 2, "w2": 3}),
    "EinMix": (("b c h w -> b h w d",), {"weight_shape": "c d", "bias_shape": "d", "c": 4, "d": 5}),
    "EinMix-grouped": (("b (g c) h w -> b (g d) h w",),
                       {"weight_shape": "g c d", "bias_shape": "g d", "g": 2, "c": 2, "d": 3}),
    "EinMix-no-bias": (("b c h w -> b h d",), {"weight_shape": "c w d", "c": 4, "w": 6, "d": 3}),
}


def _layers(name: str) -> tuple[Any, Any]:
    args, kwargs = LAYERS[name]
    cls = name.split("-")[0]
    return getattr(einops_layers, cls)(*args, **kwargs), getattr(torch_layers, cls)(*args, **kwargs)


def _load_torch_weights(ours: Any, theirs: Any) -> None:
    ours.load_state_dict({k: mininn.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_equals_torch_layer_on_the_same_weights(name: str) -> None:
    ours, theirs = _layers(name)
    assert repr(ours) == repr(theirs)
    assert isinstance(ours, mininn.nn.Module)
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    shapes = {k: tuple(v.shape) for k, v in ours.state_dict().items()}
    assert shapes == {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    _load_torch_weights(ours, theirs)
    x, tx = _pair((2, 4, 4, 6))
    _same(ours(x), theirs(tx))


def test_einmix_state_dict_names_weight_and_bias_and_its_gradients_equal_torch() -> None:
    ours, theirs = _layers("EinMix-grouped")
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight", "bias"]
    assert [n for n, _ in ours.named_parameters()] == ["weight", "bias"]
    _load_torch_weights(ours, theirs)
    x, tx = _pair((2, 4, 3, 2))
    (ours(x) ** 2).sum().backward()
    (theirs(tx) ** 2).sum().backward()
    _same(ours.weight.grad, theirs.weight.grad)
    _same(ours.bias.grad, theirs.bias.grad)


def test_einmix_initial_weights_are_within_einops_bounds() -> None:
    layer = einops_layers.EinMix("b c -> b d", weight_shape="c d", bias_shape="d", c=12, d=40)
    weight, bias = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    assert weight.shape == (12, 40) and bias.shape == (1, 40) and weight.dtype == np.float32
    assert np.abs(weight).max() <= (3 / 12) ** 0.5 and np.abs(weight).max() > 0.4 * (3 / 12) ** 0.5
    assert np.abs(bias).max() <= (1 / 12) ** 0.5 and layer.weight.requires_grad


def test_einmix_load_state_dict_of_the_wrong_shape_names_the_key() -> None:
    layer = einops_layers.EinMix("b c -> b d", weight_shape="c d", c=3, d=2)
    with pytest.raises(RuntimeError, match="size mismatch for weight"):
        layer.load_state_dict({"weight": mininn.zeros(2, 3)})


def test_bad_layer_arguments_raise_einops_errors_as_torch_layers_do() -> None:
    for cls, args, kwargs in [("Rearrange", ("a b -> a c",), {}), ("Reduce", ("a b -> a", "median"), {}),
                              ("EinMix", ("a b -> a c",), {"weight_shape": "b c", "b": 2})]:
        with pytest.raises(einops.EinopsError) as theirs:
            getattr(torch_layers, cls)(*args, **kwargs)
        with pytest.raises(einops.EinopsError) as ours:
            getattr(einops_layers, cls)(*args, **kwargs)
        assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize(("layer", "function"), [
    (einops_layers.Rearrange("b c h w -> b (c h w)"), lambda x: einops.rearrange(x, "b c h w -> b (c h w)")),
    (einops_layers.Reduce("b c h w -> b c", "max"), lambda x: einops.reduce(x, "b c h w -> b c", "max")),
])
def test_layer_given_the_wrong_number_of_dims_raises_as_the_function_does(layer: Any, function: Any) -> None:
    x = mininn.zeros(2, 3)
    with pytest.raises(einops.EinopsError) as expected:
        function(x)
    with pytest.raises(einops.EinopsError) as raised:
        layer(x)
    assert str(raised.value) == str(expected.value)
    assert "Wrong shape: expected 4 dims. Received 2-dim tensor." in str(raised.value)


def test_layers_inside_a_sequential_take_hooks_and_gradients() -> None:
    model = mininn.nn.Sequential(einops_layers.Rearrange("b c h w -> b (h w) c"), mininn.nn.Linear(4, 3),
                                 einops_layers.Reduce("b n d -> b d", "mean"))
    seen: list[tuple[int, ...]] = []
    handle = model[0].register_forward_hook(lambda module, args, out: seen.append(tuple(out.shape)))
    with handle:
        out = model(mininn.randn(2, 4, 3, 5))
    assert seen == [(2, 15, 4)] and tuple(out.shape) == (2, 3)
    out.sum().backward()
    assert model[1].weight.grad is not None and model[1].weight.grad.shape == (3, 4)


# -- loaded model code -------------------------------------------------------------------------------------

MODEL = '''
import sys

import einops
import einops.layers.torch as L
import torch
import torch.nn as nn
from einops import rearrange, reduce, repeat
from einops._torch_specific import allow_ops_in_compiled_graph
from einops.layers.torch import EinMix, Rearrange, Reduce

allow_ops_in_compiled_graph()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.to_tokens = Rearrange("b c h w -> b (h w) c")
        self.mix = EinMix("b n c -> b n d", weight_shape="c d", bias_shape="d", c=3, d=4)
        self.pool = L.Reduce("b n d -> b d", "mean")
        self.cls = nn.Parameter(torch.zeros(1, 1, 4))

    def forward(self, x):
        tokens = self.mix(self.to_tokens(x))
        cls = repeat(self.cls, "() n d -> b n d", b=x.shape[0])
        tokens = torch.cat([cls, tokens], dim=1)
        return self.pool(tokens) + reduce(rearrange(tokens, "b n d -> b d n"), "b d n -> b d", "max")


SAME = einops.layers.torch.Rearrange is Rearrange and L.Reduce is Reduce
TORCH_IMPORTED = "torch" in sys.modules and sys.modules["torch"] is not None
'''


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "model.py").write_text(MODEL)
    return tmp_path


def test_loaded_code_gets_mininn_einops_layers_and_equals_torch(folder: Path) -> None:
    code = load_code(folder, "model.py")
    assert code.SAME and code.Rearrange is einops_layers.Rearrange and code.EinMix is einops_layers.EinMix
    spec = importlib.util.spec_from_file_location("einops_test_torch_model", folder / "model.py")
    torch_code = importlib.util.module_from_spec(spec)  # the same file, with real torch and einops layers
    spec.loader.exec_module(torch_code)
    torch.manual_seed(0)
    theirs = torch_code.Net()
    with torch.no_grad():
        theirs.cls.normal_()
    ours = code.Net()
    _load_torch_weights(ours, theirs)
    x, tx = _pair((2, 3, 2, 5))
    _same(ours(x), theirs(tx))


def test_loaded_code_runs_where_torch_cannot_be_imported(folder: Path) -> None:
    script = textwrap.dedent(f"""
        import sys
        sys.modules["torch"] = None  # any import of the real torch now fails
        import numpy as np
        from pathlib import Path
        import mininn
        from mininn.torch_alias import load_code

        code = load_code(Path({str(folder)!r}), "model.py")
        out = code.Net()(mininn.tensor(np.ones((2, 3, 2, 5), np.float32)))
        assert tuple(out.shape) == (2, 4) and not code.TORCH_IMPORTED, (out.shape, code.TORCH_IMPORTED)
        assert "einops.layers.torch" not in sys.modules
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_loaded_code_sees_einops_own_modules_besides_the_torch_layers(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(
        "import einops.packing\nfrom einops import layers\nfrom einops.layers import torch as L\n"
        "from einops.parsing import ParsedExpression\n"
        "SEEN = (einops.packing.pack, layers.torch, L, ParsedExpression, einops.__version__, dir(einops))\n")
    pack, torch_layers, also, parsed, version, names = load_code(tmp_path, "model.py").SEEN
    assert pack is einops.pack and torch_layers is also is einops_layers and version == einops.__version__
    assert parsed is importlib.import_module("einops.parsing").ParsedExpression
    assert {"layers", "rearrange", "pack"} <= set(names)


def test_loaded_code_importing_a_missing_layer_fails_naming_it_and_mininns_module(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text("from einops.layers.torch import Rearrange, Magic\n")
    with pytest.raises(ImportError, match="cannot import name 'Magic' from 'mininn.nn.einops_layers'"):
        load_code(tmp_path, "model.py")


def test_import_mininn_does_not_import_einops() -> None:
    script = "import sys, mininn; print('einops' in sys.modules, 'mininn.einops' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False"]
