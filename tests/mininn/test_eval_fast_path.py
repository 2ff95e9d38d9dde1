"""The no-grad fast path (``F.linear``/``F.relu`` on the arrays, ``ArrayFunction.apply`` without
grad-state reads, ``Linear`` reading its registered parameters): the same numbers as the recorded
path, bit for bit, and as torch; the same hooks, errors and autograd as before."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import mininn
import mininn.nn.functional as MF
from mininn.nn.utils.stateless import functional_call

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _mlp_pair() -> tuple[Any, Any]:
    """The issue's MLP, Linear(784, 256) -> ReLU -> Linear(256, 10), in torch and in mininn."""
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).eval()
    m = mininn.nn.Sequential(mininn.nn.Linear(784, 256), mininn.nn.ReLU(), mininn.nn.Linear(256, 10)).eval()
    m.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    return t, m


def _x(*shape: int, dtype: Any = np.float32, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ---- the same numbers -------------------------------------------------------------------------


@pytest.mark.parametrize("batch", [1, 3])
def test_mlp_under_no_grad_equals_the_recorded_path_bitwise_and_torch(batch: int) -> None:
    t, m = _mlp_pair()
    x = _x(batch, 784)
    with mininn.no_grad():
        fast = m(mininn.tensor(x))
    recorded = m(mininn.tensor(x))  # grad on, parameters require grad: _Linear and _Relu record
    assert recorded.grad_fn is not None
    np.testing.assert_array_equal(fast.numpy(), recorded.detach().numpy())
    with torch.no_grad():
        want = t(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(fast.numpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("x_shape", "bias", "dtype"),
    [((1, 5), True, np.float32), ((5,), True, np.float32), ((2, 3, 5), True, np.float64),
     ((4, 5), False, np.float32), ((0, 5), True, np.float32), ((2, 0, 5), False, np.float64)],
)
def test_linear_fast_path_equals_the_recorded_path_bitwise(x_shape: tuple[int, ...], bias: bool,
                                                           dtype: Any) -> None:
    x, w, b = _x(*x_shape, dtype=dtype), _x(7, 5, dtype=dtype, seed=1), _x(7, dtype=dtype, seed=2)
    args = (mininn.tensor(w), mininn.tensor(b) if bias else None)
    with mininn.no_grad():
        fast = MF.linear(mininn.tensor(x), *args)
    recorded = MF.linear(mininn.tensor(x, requires_grad=True), *args)
    assert recorded.grad_fn is not None
    assert fast.shape == recorded.shape == torch.Size(x_shape[:-1] + (7,))
    np.testing.assert_array_equal(fast.numpy(), recorded.detach().numpy())
    want = TF.linear(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b) if bias else None)
    np.testing.assert_allclose(fast.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_relu_fast_path_equals_the_recorded_path_and_torch_on_signed_zeros_nan_and_ints() -> None:
    x = np.array([[-1.5, -0.0, 0.0, 2.0, np.nan, -np.inf, np.inf]], np.float32)
    with mininn.no_grad():
        fast = MF.relu(mininn.tensor(x))
        module = mininn.nn.ReLU()(mininn.tensor(x))
    recorded = MF.relu(mininn.tensor(x, requires_grad=True))
    assert recorded.grad_fn is not None
    for got in (fast, module):
        assert got.dtype == mininn.float32
        np.testing.assert_array_equal(got.numpy(), recorded.detach().numpy())
        np.testing.assert_array_equal(np.signbit(got.numpy()), np.signbit(recorded.detach().numpy()))
    np.testing.assert_array_equal(fast.numpy(), torch.relu(torch.from_numpy(x)).numpy())
    ints = np.array([-3, 0, 4], np.int64)
    with mininn.no_grad():
        got = MF.relu(mininn.tensor(ints))
    assert got.dtype == mininn.int64
    np.testing.assert_array_equal(got.numpy(), torch.relu(torch.from_numpy(ints)).numpy())


def test_inference_mode_and_a_model_without_grads_take_the_same_numbers() -> None:
    _, m = _mlp_pair()
    x = mininn.tensor(_x(2, 784))
    with mininn.no_grad():
        want = m(x).numpy()
    with mininn.inference_mode():
        np.testing.assert_array_equal(m(x).numpy(), want)
    m.requires_grad_(False)  # grad mode on, nothing requires grad: nothing is recorded either
    out = m(x)
    assert out.grad_fn is None and not out.requires_grad
    np.testing.assert_array_equal(out.numpy(), want)


# ---- no graph ---------------------------------------------------------------------------------


def test_no_grad_results_have_no_grad_fn_even_when_parameters_require_grad() -> None:
    _, m = _mlp_pair()
    x = mininn.tensor(_x(1, 784), requires_grad=True)
    with mininn.no_grad():
        outs = [m(x), m[0](x), MF.relu(x), MF.linear(x, m[0].weight, m[0].bias), x * 2]
    for out in outs:
        assert out.grad_fn is None
        assert not out.requires_grad
        assert out.is_leaf
        assert type(out) is mininn.Tensor


def test_no_grad_multi_output_and_view_ops_still_work() -> None:
    base = mininn.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    with mininn.no_grad():
        values, indices = base.max(dim=1)
        row = base[1]
        halves = base.split(2, dim=1)
    assert values.grad_fn is None and indices.dtype == mininn.int64
    np.testing.assert_array_equal(values.numpy(), [3, 7, 11])
    assert all(h.grad_fn is None for h in halves)
    row.add_(100)  # a view made under no_grad still writes through to its base
    np.testing.assert_array_equal(base.numpy()[1], [104, 105, 106, 107])


# ---- autograd unchanged with grad enabled -----------------------------------------------------


def test_gradients_with_grad_enabled_match_torch() -> None:
    t, m = _mlp_pair()
    x = _x(3, 784)
    tx, mx = torch.from_numpy(x).requires_grad_(), mininn.tensor(x, requires_grad=True)
    t.train()
    m.train()
    (t(tx) ** 2).sum().backward()
    (m(mx) ** 2).sum().backward()
    np.testing.assert_allclose(mx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    for (name, mp), tp in zip(m.named_parameters(), t.parameters()):
        np.testing.assert_allclose(mp.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def test_only_the_input_requiring_grad_still_records_linear() -> None:
    lin = mininn.nn.Linear(4, 3).requires_grad_(False)
    x = mininn.tensor(_x(2, 4), requires_grad=True)
    out = lin(x)
    assert out.grad_fn is not None
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.tile(lin.weight.numpy().sum(0), (2, 1)), rtol=1e-6)


def _view_adopting_history(lib: Any) -> tuple[bool, np.ndarray]:
    """A linear input that is a view made before its base had a history, read after it got one."""
    buf = lib.zeros(2, 4)
    first = buf[0:1]
    p = lib.ones(4, requires_grad=True)
    buf[0].copy_(p * 2)  # the base gets a history through another view
    out = (MF if lib is mininn else TF).linear(first, lib.ones(3, 4), lib.zeros(3))
    out.sum().backward()
    return out.requires_grad, p.grad.numpy().copy()


def test_a_view_whose_base_got_a_history_is_recorded_as_in_torch() -> None:
    got, want = _view_adopting_history(mininn), _view_adopting_history(torch)
    assert got[0] is want[0] is True
    np.testing.assert_array_equal(got[1], want[1])


# ---- hooks, errors, re-parametrized weights ---------------------------------------------------


def _hook_trace(lib: Any) -> list[str]:
    """Global and module forward (pre-)hooks of a Sequential and its children, under no-grad."""
    nn = lib.nn
    trace: list[str] = []
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU()).eval()
    names = {id(mod): name or "seq" for name, mod in model.named_modules()}
    handles = [
        nn.modules.module.register_module_forward_pre_hook(
            lambda mod, args: trace.append(f"global_pre:{names[id(mod)]}")),
        nn.modules.module.register_module_forward_hook(
            lambda mod, args, out: trace.append(f"global_post:{names[id(mod)]}")),
    ]
    for name, mod in model.named_modules():
        name = name or "seq"
        handles.append(mod.register_forward_pre_hook(lambda mod, args, n=name: trace.append(f"pre:{n}")))
        handles.append(mod.register_forward_hook(
            lambda mod, args, kwargs, out, n=name: trace.append(f"post_kwargs:{n}"), with_kwargs=True))
    try:
        with lib.no_grad():
            model(lib.ones(1, 3))
    finally:
        for h in handles:
            h.remove()
    return trace


def test_hooks_fire_in_torchs_order_under_no_grad() -> None:
    got = _hook_trace(mininn)
    assert got == _hook_trace(torch)
    assert got[:3] == ["global_pre:seq", "pre:seq", "global_pre:0"]


def test_hooks_that_replace_input_and_output_apply_under_no_grad() -> None:
    lin = mininn.nn.Linear(2, 2, bias=False)
    with mininn.no_grad():
        lin.weight.copy_(mininn.eye(2))
    lin.register_forward_pre_hook(lambda mod, args: (args[0] * 10,))
    lin.register_forward_hook(lambda mod, args, out: out + 1)
    with mininn.no_grad():
        out = lin(mininn.ones(1, 2))
    np.testing.assert_array_equal(out.numpy(), [[11.0, 11.0]])


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "b_shape", "x_dtype"),
    [((2, 4), (3, 5), (3,), np.float32), ((2, 4), (3, 4), (2,), np.float32),
     ((2, 4), (3, 4), (3,), np.float64), ((2, 4), (3, 4), None, np.float64), ((), (3, 1), (3,), np.float32),
     ((), (3, 1), None, np.float32), ((2, 4), (), None, np.float32)],
)
def test_linear_errors_under_no_grad_are_torchs(x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                                                b_shape: tuple[int, ...] | None, x_dtype: Any) -> None:
    x, w = _x(*x_shape, dtype=x_dtype), _x(*w_shape)
    b = None if b_shape is None else _x(*b_shape)
    with torch.no_grad(), pytest.raises(RuntimeError) as want:
        TF.linear(torch.from_numpy(x), torch.from_numpy(w), None if b is None else torch.from_numpy(b))
    with mininn.no_grad(), pytest.raises(RuntimeError) as got:
        MF.linear(mininn.tensor(x), mininn.tensor(w), None if b is None else mininn.tensor(b))
    assert str(got.value) == str(want.value)


@pytest.mark.filterwarnings("ignore:.*weight_norm.* is deprecated:FutureWarning")
def test_weight_norm_and_parametrized_linear_under_no_grad_match_torch() -> None:
    torch.manual_seed(0)
    x = _x(2, 4)
    t_wn = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3))
    m_wn = mininn.nn.utils.weight_norm(mininn.nn.Linear(4, 3))
    m_wn.load_state_dict({k: v.detach().numpy() for k, v in t_wn.state_dict().items()})

    class Double(torch.nn.Module):
        def forward(self, w: Any) -> Any:
            return w * 2

    class MDouble(mininn.nn.Module):
        def forward(self, w: Any) -> Any:
            return w * 2

    t_par, m_par = torch.nn.Linear(4, 3), mininn.nn.Linear(4, 3)
    m_par.load_state_dict({k: v.numpy() for k, v in t_par.state_dict().items()})
    torch.nn.utils.parametrize.register_parametrization(t_par, "weight", Double())
    mininn.nn.utils.parametrize.register_parametrization(m_par, "weight", MDouble())
    for t_mod, m_mod in ((t_wn, m_wn), (t_par, m_par)):
        with torch.no_grad(), mininn.no_grad():
            want = t_mod(torch.from_numpy(x)).numpy()
            got = m_mod(mininn.tensor(x)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.filterwarnings("ignore:.*functional_call.* is deprecated:FutureWarning")
def test_functional_call_swaps_linear_parameters_under_no_grad() -> None:
    lin = mininn.nn.Linear(2, 2)
    swapped = {"weight": mininn.eye(2) * 3, "bias": mininn.zeros(2)}
    with mininn.no_grad():
        out = functional_call(lin, swapped, (mininn.ones(1, 2),))
        own = lin(mininn.ones(1, 2))
        want = MF.linear(mininn.ones(1, 2), lin.weight, lin.bias)
    np.testing.assert_array_equal(out.numpy(), [[3.0, 3.0]])
    np.testing.assert_array_equal(own.numpy(), want.numpy())
