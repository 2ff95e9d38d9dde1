"""ActivationCapture against torch 2.13 forward hooks: captures, statistics, interventions,
module selection, naming, isolation between threads, clean-up and every bad argument."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import numpy as np
import pytest

import mininn
from mininn import nn
from mininn.nn.capture import activation_stats, match_modules

torch = pytest.importorskip("torch")

TOL = dict(rtol=2e-5, atol=2e-5)


# ---- twins -----------------------------------------------------------------------------------
def _cnn_class(lib: Any) -> type:
    class Block(lib.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = lib.Conv2d(4, 4, 3, padding=1)
            self.bn = lib.BatchNorm2d(4)
            self.relu = lib.ReLU(inplace=True)

        def forward(self, x: Any) -> Any:
            out = self.relu(self.bn(self.conv(x)))  # in place on bn's output
            return self.relu(out + x)  # the same ReLU, a second call

    class Net(lib.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = lib.Conv2d(3, 4, 3)
            self.block = Block()
            self.pool = lib.MaxPool2d(2)
            self.head = lib.Sequential(lib.Flatten(), lib.Linear(4 * 3 * 3, 5))

        def forward(self, x: Any) -> Any:
            return self.head(self.pool(self.block(self.stem(x))))

    return Net


def _copy_weights(t_mod: Any, m_mod: Any) -> None:
    state = {k: mininn.tensor(v.detach().numpy().copy()) for k, v in t_mod.state_dict().items()}
    missing, unexpected = m_mod.load_state_dict(state)
    assert missing == [] and unexpected == []


def _cnn_twins() -> tuple[Any, Any, np.ndarray]:
    torch.manual_seed(0)
    t = _cnn_class(torch.nn)()
    t.block.bn.running_mean.uniform_(-0.5, 0.5)
    t.block.bn.running_var.uniform_(0.5, 2.0)
    t.eval()
    m = _cnn_class(nn)().eval()
    _copy_weights(t, m)
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    return t, m, x


def _encoder(lib: Any) -> Any:
    layer = lib.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
    return lib.TransformerEncoder(layer, 2, enable_nested_tensor=False)


def _encoder_twins() -> tuple[Any, Any, np.ndarray]:
    torch.manual_seed(1)
    t = _encoder(torch.nn).eval()
    m = _encoder(nn).eval()
    _copy_weights(t, m)
    x = np.random.default_rng(1).standard_normal((2, 5, 16)).astype(np.float32)
    return t, m, x


def _run_torch(model: Any, x: np.ndarray, **kwargs: Any) -> Any:
    # Grad on (the parameters require it): torch's slow path, which calls every submodule.
    with torch.enable_grad():
        return model(torch.tensor(x), **kwargs).detach()


# ---- torch's side of the capture contract (names and order), written out independently ------
def _flat(value: Any, suffix: str) -> list[tuple[str, Any]]:
    if isinstance(value, torch.Tensor):
        return [(suffix, value.detach().clone())]
    if isinstance(value, (tuple, list)):
        return [e for i, v in enumerate(value) for e in _flat(v, f"{suffix}.{i}")]
    if isinstance(value, dict):
        return [e for k, v in value.items() for e in _flat(v, f"{suffix}.{k}")]
    return []


def _torch_captures(model: Any, mode: str, run: Any) -> dict[str, Any]:
    """Record with plain torch hooks; return name -> array in the documented order."""
    order = {name: i for i, (name, _) in enumerate(model.named_modules()) if name}
    calls: Counter[tuple[str, int]] = Counter()
    rows: list[tuple[tuple[int, ...], str, np.ndarray]] = []

    def add(name: str, kind: int, entries: list[tuple[str, Any]]) -> None:
        call = calls[name, kind]
        calls[name, kind] += 1
        for seq, (suffix, tensor) in enumerate(entries):
            label = f"{name}:{('input', 'output')[kind]}{suffix}{f'@{call}' if call else ''}"
            rows.append(((order[name], kind, call, seq), label, tensor.numpy()))

    handles = []
    for name, module in model.named_modules():
        if not name:
            continue
        if mode in ("input", "both"):
            def pre(mod: Any, args: Any, kwargs: Any, name: str = name) -> None:
                entries = _flat(args[0], "") if len(args) == 1 else _flat(tuple(args), "")
                add(name, 0, entries + _flat(dict(kwargs), ""))

            handles.append(module.register_forward_pre_hook(pre, with_kwargs=True))
        if mode in ("output", "both"):
            def post(mod: Any, args: Any, out: Any, name: str = name) -> None:
                add(name, 1, _flat(out, ""))

            handles.append(module.register_forward_hook(post))
    try:
        run()
    finally:
        for handle in handles:
            handle.remove()
    return {label: array for _, label, array in sorted(rows, key=lambda r: r[0])}


def _no_hooks_left(model: nn.Module) -> bool:
    return all(
        not (m._forward_hooks or m._forward_pre_hooks or m._forward_hooks_with_kwargs
             or m._forward_pre_hooks_with_kwargs or m._forward_hooks_always_called)
        for m in model.modules()
    )


def _assert_same_captures(ours: dict[str, mininn.Tensor], theirs: dict[str, np.ndarray]) -> None:
    assert list(ours) == list(theirs)
    for name, array in theirs.items():
        np.testing.assert_allclose(ours[name].numpy(), array, **TOL, err_msg=name)


# ---- parity: captures -------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["output", "input", "both"])
def test_cnn_captures_of_every_module_equal_torch_forward_hooks(mode):
    t, m, x = _cnn_twins()
    theirs = _torch_captures(t, mode, lambda: _run_torch(t, x))
    with mininn.no_grad(), nn.ActivationCapture(m, ["*"], capture=mode) as cap:
        m(mininn.tensor(x))
    _assert_same_captures(cap.activations, theirs)
    assert ("block.relu:output@1" in cap.activations) == (mode != "input")
    assert _no_hooks_left(m)


@pytest.mark.parametrize("mode", ["output", "input", "both"])
def test_transformer_encoder_captures_equal_torch_forward_hooks(mode):
    t, m, x = _encoder_twins()
    theirs = _torch_captures(t, mode, lambda: _run_torch(t, x))
    with nn.ActivationCapture(m, ["layers.*"], capture=mode) as cap:
        m(mininn.tensor(x))
    _assert_same_captures(cap.activations, theirs)
    names = list(cap.activations)
    if mode != "input":
        assert "layers.0.self_attn:output.0" in names  # (attn_output, None): None skipped
        assert "layers.0.self_attn:output.1" not in names
    if mode != "output":
        assert "layers.1.self_attn:input.2" in names  # query, key, value
    assert _no_hooks_left(m)


def test_keyword_tensor_inputs_are_captured_under_their_keyword():
    _, m, x = _encoder_twins()
    mask = np.array([[False] * 5, [False, False, False, True, True]])
    with nn.ActivationCapture(m, "layers.0", capture="input") as cap:
        m(mininn.tensor(x), src_key_padding_mask=mininn.tensor(mask))
    assert list(cap.activations) == ["layers.0:input", "layers.0:input.src_key_padding_mask"]
    np.testing.assert_array_equal(cap.activations["layers.0:input"].numpy(), x)


def test_attention_weights_come_back_as_a_second_element():
    attn = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x = mininn.randn(1, 3, 8)
    holder = nn.Sequential()
    holder.attn = attn
    with nn.ActivationCapture(holder, "attn") as cap:
        out, weights = holder.attn(x, x, x, need_weights=True)
    assert list(cap.activations) == ["attn:output.0", "attn:output.1"]
    np.testing.assert_array_equal(cap.activations["attn:output.1"].numpy(), weights.detach().numpy())


def test_dict_outputs_are_suffixed_with_their_keys():
    class Heads(nn.Module):
        def forward(self, x):
            return {"logits": x * 2, "skip": None, "aux": (x, x + 1)}

    model = nn.Sequential(Heads())
    with nn.ActivationCapture(model, "0") as cap:
        model(mininn.ones(2))
    assert list(cap.activations) == ["0:output.logits", "0:output.aux.0", "0:output.aux.1"]


def test_results_follow_named_modules_order_not_argument_order():
    _, m, x = _cnn_twins()
    with nn.ActivationCapture(m, ["head.1", "stem", "block.bn", "stem"]) as cap:
        m(mininn.tensor(x))
    assert list(cap.activations) == ["stem:output", "block.bn:output", "head.1:output"]


def test_captures_are_copies_unchanged_by_later_in_place_work():
    _, m, x = _cnn_twins()
    with nn.ActivationCapture(m, ["block.bn", "head.1"]) as cap:
        y = m(mininn.tensor(x))
    bn = cap.activations["block.bn:output"].numpy()
    assert (bn < 0).any()  # the in-place ReLU that followed did not clip the copy
    before = cap.activations["head.1:output"].numpy().copy()
    y.mul_(0)
    np.testing.assert_array_equal(cap.activations["head.1:output"].numpy(), before)
    assert not cap.activations["head.1:output"].requires_grad


def test_every_forward_in_the_block_is_recorded_with_a_call_suffix():
    model = nn.Sequential(nn.Linear(3, 3))
    with nn.ActivationCapture(model, "0") as cap:
        model(mininn.ones(1, 3))
        model(mininn.zeros(1, 3))
    assert list(cap.activations) == ["0:output", "0:output@1"]


# ---- selecting modules -----------------------------------------------------------------------
def test_star_matches_dots_and_the_root_is_never_matched():
    _, m, _ = _cnn_twins()
    assert [n for n, _ in match_modules(m, "block.*")] == ["block.conv", "block.bn", "block.relu"]
    assert [n for n, _ in match_modules(m, "*")] == [n for n, _ in m.named_modules() if n]
    assert [n for n, _ in match_modules(m, "head.?")] == ["head.0", "head.1"]
    assert [n for n, _ in match_modules(m, ["*.conv", "block.[b]n"])] == ["block.conv", "block.bn"]


def test_layer_star_matches_nested_modules_of_a_resnet_like_tree():
    model = nn.Sequential()
    model.layer1 = nn.Sequential(nn.Sequential(nn.Conv2d(1, 1, 1)))
    names = [n for n, _ in match_modules(model, "layer1.*")]
    assert names == ["layer1.0", "layer1.0.0"]


# ---- parity: statistics ----------------------------------------------------------------------
def test_statistics_equal_torch_reductions_and_histc():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 6, 5)).astype(np.float32)
    a[a < -0.5] = 0.0
    stats = activation_stats(mininn.tensor(a), bins=7)
    t = torch.tensor(a).double()
    assert stats.shape == (4, 6, 5)
    assert stats.mean == pytest.approx(t.mean().item(), rel=1e-12)
    assert stats.std == pytest.approx(t.std(correction=0).item(), rel=1e-12)
    assert stats.min == t.min().item() and stats.max == t.max().item()
    assert stats.l2_norm == pytest.approx(t.norm().item(), rel=1e-12)
    assert stats.zero_fraction == (t == 0).double().mean().item()
    assert list(stats.histogram) == torch.histc(t, bins=7).long().tolist()
    edges = np.linspace(t.min().item(), t.max().item(), 8)
    np.testing.assert_allclose(stats.bin_edges, edges, rtol=1e-12)
    assert stats.size == 6 + 7 + 8


def test_statistics_of_a_constant_tensor_span_value_plus_minus_one_like_histc():
    stats = activation_stats(mininn.full((3, 3), 2.0), bins=4)
    assert list(stats.histogram) == torch.histc(torch.full((3, 3), 2.0), bins=4).long().tolist()
    assert stats.bin_edges == (1.0, 1.5, 2.0, 2.5, 3.0)
    assert stats.std == 0.0 and stats.zero_fraction == 0.0


def test_statistics_to_dict_is_json_safe_for_empty_and_non_finite_tensors():
    empty = activation_stats(mininn.zeros(0, 3), bins=2).to_dict()
    assert empty["shape"] == [0, 3] and empty["mean"] is None and empty["histogram"] == [0, 0]
    odd = activation_stats(mininn.tensor([1.0, float("inf"), 3.0]), bins=2).to_dict()
    assert odd["max"] is None and odd["mean"] is None and odd["min"] == 1.0
    assert odd["histogram"] == [1, 1] and odd["bin_edges"] == [1.0, 2.0, 3.0]


def test_reduce_stats_records_statistics_of_every_capture_instead_of_tensors():
    t, m, x = _cnn_twins()
    theirs = _torch_captures(t, "both", lambda: _run_torch(t, x))
    with nn.ActivationCapture(m, "*", capture="both", reduce="stats", bins=5) as cap:
        m(mininn.tensor(x))
    assert cap.activations == {} and list(cap.stats) == list(theirs)
    for name, array in theirs.items():
        got = cap.stats[name]
        assert got.shape == array.shape
        assert got.mean == pytest.approx(float(array.astype(np.float64).mean()), rel=1e-4, abs=1e-6)
        assert list(got.histogram) == torch.histc(torch.tensor(array).double(), bins=5).long().tolist()


# ---- parity: interventions -------------------------------------------------------------------
def _torch_edit(module: Any, edit: Any, element: int | None = None) -> Any:
    def hook(mod: Any, args: Any, out: Any) -> Any:
        if element is None:
            out = out.clone()
            edit(out)
            return out
        items = list(out)
        items[element] = items[element].clone()
        edit(items[element])
        return tuple(items)

    return module.register_forward_hook(hook)


def _zero_channel_1(o):
    o[:, 1] = 0


def _scale_channels(o):
    o[:, [0, 2]] *= 2.5


def _add_row(o):
    o[:, :, 0] += torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])


def _set_all(o):
    o[...] = 0.5


def _negate_last_column(o):
    o[..., 2] *= -1.0


CNN_EDITS = [
    ("block.conv", dict(op="zero", index=np.s_[:, 1]), _zero_channel_1),
    ("block.bn", dict(op="scale", value=2.5, index=np.s_[:, [0, 2]]), _scale_channels),
    ("stem", dict(op="add", value=[1, 2, 3, 4, 5, 6], index=np.s_[:, :, 0]), _add_row),
    ("head.1", dict(op="set", value=0.5), _set_all),
    ("block.relu", dict(op="scale", value=-1.0, index=np.s_[..., 2]), _negate_last_column),  # both calls
]


@pytest.mark.parametrize(("name", "spec", "edit"), CNN_EDITS, ids=[c[0] for c in CNN_EDITS])
def test_cnn_interventions_equal_the_same_edit_by_a_torch_hook(name, spec, edit):
    t, m, x = _cnn_twins()
    handle = _torch_edit(t.get_submodule(name), edit)
    theirs = _torch_captures(t, "output", lambda: _run_torch(t, x))
    handle.remove()
    with nn.ActivationCapture(m, "*", interventions=[nn.Intervention(name, **spec)]) as cap:
        y = m(mininn.tensor(x)).detach()
    np.testing.assert_allclose(y.numpy(), theirs["head.1:output"], **TOL)
    _assert_same_captures(cap.activations, theirs)  # captures see the edited outputs
    assert _no_hooks_left(m)


def test_transformer_interventions_equal_torch_hooks_on_a_pattern_and_a_tuple_output():
    t, m, x = _encoder_twins()
    value = np.linspace(-1, 1, 16).astype(np.float32)

    def zero_token_0(o):
        o[:, 0] = 0

    def shift_features(o):
        o[:, :, 1:3] += 1.0

    def set_norm(o):
        o[...] = torch.tensor(value)

    handles = [_torch_edit(t.layers[i].self_attn, zero_token_0, element=0) for i in range(2)]
    handles.append(_torch_edit(t.layers[0].linear1, shift_features))
    handles.append(_torch_edit(t.layers[1].norm1, set_norm))
    expected = _run_torch(t, x).numpy()
    for handle in handles:
        handle.remove()
    interventions = [
        nn.Intervention("layers.*.self_attn", "zero", index=np.s_[:, 0]),
        nn.Intervention("layers.0.linear1", "add", 1.0, index=np.s_[:, :, 1:3]),
        nn.Intervention("layers.1.norm1", "set", value),
    ]
    with nn.ActivationCapture(m, interventions=interventions):
        y = m(mininn.tensor(x)).detach()
    np.testing.assert_allclose(y.numpy(), expected, **TOL)
    assert not np.allclose(y.numpy(), _run_torch(t, x).numpy(), atol=1e-3)  # the edits mattered


def test_gradients_flow_through_an_intervention_like_torch():
    t, m, x = _cnn_twins()
    handle = _torch_edit(t.block.bn, _scale_channels)
    tx = torch.tensor(x, requires_grad=True)
    t(tx).square().sum().backward()
    handle.remove()
    mx = mininn.tensor(x, requires_grad=True)
    with nn.ActivationCapture(m, interventions=[nn.Intervention("block.bn", "scale", 2.5, np.s_[:, [0, 2]])]):
        m(mx).square().sum().backward()
    np.testing.assert_allclose(mx.grad.numpy(), tx.grad.numpy(), **TOL)


# ---- lifetime and isolation ------------------------------------------------------------------
def test_hooks_are_removed_when_forward_raises():
    _, m, _ = _cnn_twins()
    cap = nn.ActivationCapture(m, "*", capture="both", interventions=[nn.Intervention("stem", "zero")])
    with pytest.raises(RuntimeError), cap:
        m(mininn.zeros(2, 5, 8, 8))  # stem wants 3 channels
    assert _no_hooks_left(m)


def test_hook_dictionaries_are_empty_after_the_block_and_plain_calls_are_unchanged():
    _, m, x = _cnn_twins()
    m.requires_grad_(False)
    plain = m(mininn.tensor(x)).numpy()
    with nn.ActivationCapture(m, "*", capture="both", interventions=[nn.Intervention("head.*", "zero")]):
        assert not _no_hooks_left(m)
        m(mininn.tensor(x))
    assert _no_hooks_left(m)
    np.testing.assert_array_equal(m(mininn.tensor(x)).numpy(), plain)


def test_another_thread_running_the_same_model_is_untouched_by_an_active_capture():
    _, m, x = _cnn_twins()
    m.requires_grad_(False)
    plain = m(mininn.tensor(x)).numpy()
    seen: dict[str, Any] = {}

    def other_request() -> None:
        seen["y"] = m(mininn.tensor(x)).numpy()

    edit = nn.Intervention("block.conv", "zero")
    with nn.ActivationCapture(m, "*", interventions=[edit]) as cap:
        worker = threading.Thread(target=other_request)
        worker.start()  # runs through our hooks while they are registered
        worker.join()
        assert cap.activations == {}  # nothing recorded from the other thread
        edited = m(mininn.tensor(x)).numpy()
    np.testing.assert_array_equal(seen["y"], plain)
    assert not np.allclose(edited, plain)
    assert len(cap.activations) == 10  # this thread's forward only: 9 modules, the ReLU twice


def test_nested_captures_both_record_and_one_capture_cannot_be_entered_twice():
    _, m, x = _cnn_twins()
    outer = nn.ActivationCapture(m, "stem")
    with outer, nn.ActivationCapture(m, "stem", reduce="stats") as inner:
        m(mininn.tensor(x))
        with pytest.raises(RuntimeError, match="already active; it cannot be entered twice"):
            outer.__enter__()
    assert list(outer.activations) == ["stem:output"] and list(inner.stats) == ["stem:output"]
    assert _no_hooks_left(m)


def test_max_elements_drops_the_records_and_raises_naming_the_total():
    _, m, x = _cnn_twins()
    cap = nn.ActivationCapture(m, ["stem", "block.conv"], max_elements=300)
    with pytest.raises(nn.CaptureLimitError) as info, cap:
        m(mininn.tensor(x))
    assert info.value.total == 2 * 2 * 4 * 6 * 6 and info.value.limit == 300
    assert str(info.value) == (
        "captures would return 576 elements, over the limit of 300; capture fewer modules, "
        "a smaller batch, or reduce='stats'"
    )
    assert cap.results == {} and _no_hooks_left(m)
    with nn.ActivationCapture(m, ["stem"], max_elements=288) as ok:
        m(mininn.tensor(x))
    assert ok.total_elements == 288 and len(ok.activations) == 1


# ---- bad arguments ---------------------------------------------------------------------------
BAD_ARGUMENTS = [
    (dict(modules=["stem"], capture="outputs"),
     "capture must be one of 'output', 'input', 'both', got 'outputs'"),
    (dict(modules=["stem"], reduce="mean"), "reduce must be one of 'none', 'stats', got 'mean'"),
    (dict(modules=["stem"], bins=0), "bins must be an integer from 1 to 10000, got 0"),
    (dict(modules=["stem"], bins=True), "bins must be an integer from 1 to 10000, got True"),
    (dict(modules=["stem"], max_elements=-1), "max_elements must be a non-negative integer, got -1"),
    (dict(modules=["stem", ""]), "modules[1] must be a non-empty module name or pattern, got ''"),
    (dict(modules=[3]), "modules[0] must be a non-empty module name or pattern, got 3"),
    (dict(modules=["block.cnv"]),
     "modules[0] 'block.cnv' is not a module of the model; closest names: 'block.conv', 'block.bn', 'block', "
     "'block.relu'"),
    (dict(modules=["xyz"]),
     "modules[0] 'xyz' is not a module of the model; the model's top-level modules are "
     "'stem', 'block', 'pool', 'head'"),
    (dict(modules=["layer1.*"]),
     "modules[0] pattern 'layer1.*' matches no module; the model's top-level modules are "
     "'stem', 'block', 'pool', 'head'"),
    (dict(interventions={"module": "stem", "op": "zero"}),
     "interventions must be a list of interventions, got {'module': 'stem', 'op': 'zero'}"),
    (dict(interventions=["stem"]), "interventions[0] must be an Intervention, got 'stem'"),
    (dict(interventions=[{"module": "stem", "op": "zero"}]),
     "interventions[0] must be an Intervention, got {'module': 'stem', 'op': 'zero'}"),
    (dict(interventions=[nn.Intervention("stem", "zero"), nn.Intervention("stme", "zero")]),
     "interventions[1].module 'stme' is not a module of the model; closest names: 'stem'"),
]


@pytest.mark.parametrize(("kwargs", "message"), BAD_ARGUMENTS, ids=[m for _, m in BAD_ARGUMENTS])
def test_bad_arguments_raise_capture_error_naming_the_field_before_any_hook(kwargs, message):
    _, m, _ = _cnn_twins()
    modules = kwargs.pop("modules", ())
    with pytest.raises(nn.CaptureError) as info:
        nn.ActivationCapture(m, modules, **kwargs)
    assert str(info.value) == message
    assert message.startswith(info.value.field + " ")
    assert _no_hooks_left(m)


INTERVENTION_ERRORS = [
    (dict(module="", op="zero"), "module must be a non-empty module name or pattern, got ''"),
    (dict(module="stem", op="mul", value=2), "op must be one of 'zero', 'scale', 'add', 'set', got 'mul'"),
    (dict(module="stem", op="scale"), "value is required by op 'scale'"),
    (dict(module="stem", op="zero", value=1), "value is not used by op 'zero'; leave it out (got 1)"),
    (dict(module="stem", op="add", value="one"),
     "value must be a number or a (nested) list of numbers, got 'one'"),
    (dict(module="stem", op="add", value=[[1, 2], [3]]),
     "value must be a number or a (nested) list of numbers, got [[1, 2], [3]]"),
    (dict(module="stem", op="zero", index=[]),
     "index must be what output[index] takes: an int, a slice, '...', a non-empty list of ints or a "
     "tuple of them, got []"),
    (dict(module="stem", op="zero", index=True),
     "index must be what output[index] takes: an int, a slice, '...', a non-empty list of ints or a "
     "tuple of them, got True"),
    (dict(module="stem", op="zero", index=":, 0"),
     "index must be what output[index] takes: an int, a slice, '...', a non-empty list of ints or a "
     "tuple of them, got ':, 0'"),
    (dict(module="stem", op="zero", element=1.5),
     "element must be a position, a key, or a path to a tensor inside the output as capture names write "
     "it ('1.0' or [1, 0]), got 1.5"),
]


@pytest.mark.parametrize(("kwargs", "message"), INTERVENTION_ERRORS, ids=[m for _, m in INTERVENTION_ERRORS])
def test_bad_intervention_arguments_raise_capture_error_naming_the_argument(kwargs, message):
    with pytest.raises(nn.CaptureError) as info:
        nn.Intervention(**kwargs)
    assert str(info.value) == message
    assert info.value.field == message.split()[0]


def test_an_int_index_picks_along_the_first_dimension_like_output_indexing():
    model = nn.Sequential(nn.Identity())
    with nn.ActivationCapture(model, interventions=[nn.Intervention("0", "set", 5.0, index=1)]):
        y = model(mininn.zeros(3, 2))
    np.testing.assert_array_equal(y.numpy(), [[0, 0], [5, 5], [0, 0]])


FORWARD_ERRORS = [
    (nn.Intervention("head.1", "zero", index=np.s_[:, [7]]),
     "interventions[0].index (slice(None, None, None), [7]) does not fit the output of 'head.1' with "
     "shape [2, 5]: index 7 is out of bounds for axis 1 with size 5"),
    (nn.Intervention("head.1", "zero", index=np.s_[:, :, 0]),
     "interventions[0].index (slice(None, None, None), slice(None, None, None), 0) does not fit the "
     "output of 'head.1' with shape [2, 5]: too many indices for array: array is 2-dimensional, but 3 "
     "were indexed"),
    (nn.Intervention("head.1", "set", [1, 2, 3], index=np.s_[:, [0, 1]]),
     "interventions[0].value of shape [3] does not broadcast to the [2, 2] elements of 'head.1' "
     "that index selects"),
]


@pytest.mark.parametrize(("edit", "message"), FORWARD_ERRORS, ids=[m for _, m in FORWARD_ERRORS])
def test_interventions_that_do_not_fit_the_output_fail_the_forward_and_clean_up(edit, message):
    _, m, x = _cnn_twins()
    with pytest.raises(nn.CaptureError) as info, nn.ActivationCapture(m, "*", interventions=[edit]):
        m(mininn.tensor(x))
    assert str(info.value) == message
    assert _no_hooks_left(m)


def test_element_errors_name_the_output_they_do_not_fit():
    holder = nn.Sequential()
    holder.attn = nn.MultiheadAttention(4, 1, batch_first=True)
    x = mininn.randn(1, 2, 4)
    with pytest.raises(nn.CaptureError) as info, nn.ActivationCapture(
        holder, interventions=[nn.Intervention("attn", "zero", element=2)]
    ):
        holder.attn(x, x, x)
    assert str(info.value) == (
        "interventions[0].element 2 names no tensor in the tuple output of 'attn'; "
        "its tensors are at '0', '1'"
    )
    assert _no_hooks_left(holder)
