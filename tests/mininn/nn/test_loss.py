"""Losses (functional and modules) against torch 2.13: values, gradients, messages, reprs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional

REDUCTIONS = ["mean", "sum", "none"]


def _pair(array: np.ndarray, grad: bool = False) -> tuple:
    """The same array as a torch tensor and a mininn tensor."""
    t = torch.tensor(array, requires_grad=grad)
    m = mininn.tensor(array.copy(), requires_grad=grad)
    return t, m


def _compare(t_fn, m_fn, arrays, grad_idx=(0,), tol=1e-5, **kwargs):
    """Run both, backprop the same random cotangent, compare value and input grads."""
    rng = np.random.default_rng(1)
    pairs = [_pair(a, i in grad_idx) for i, a in enumerate(arrays)]
    to = t_fn(*[p[0] for p in pairs], **_to_torch(kwargs))
    mo = m_fn(*[p[1] for p in pairs], **_to_mininn(kwargs))
    assert tuple(mo.shape) == tuple(to.shape)
    assert mo.dtype.name == str(to.dtype).removeprefix("torch.")
    np.testing.assert_allclose(mo.detach().numpy(), to.detach().numpy(), rtol=tol, atol=tol)
    cot = rng.standard_normal(tuple(to.shape)).astype(arrays[0].dtype)
    to.backward(torch.tensor(cot))
    mo.backward(mininn.tensor(cot))
    for i in grad_idx:
        np.testing.assert_allclose(pairs[i][1].grad.numpy(), pairs[i][0].grad.numpy(), rtol=tol,
                                   atol=tol)


def _to_torch(kwargs: dict) -> dict:
    return {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}


def _to_mininn(kwargs: dict) -> dict:
    return {k: mininn.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


# ---- mse / l1 ----------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss"])
def test_pointwise_losses_match_torch_values_and_grads_of_input_and_target(rng, name, reduction):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    y = rng.standard_normal((4, 5)).astype(np.float32)
    _compare(getattr(TF, name), getattr(F, name), [x, y], grad_idx=(0, 1), reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_weighted_mse_divides_the_mean_by_the_weight_sum(rng, reduction):
    x = rng.standard_normal((3, 4))
    y = rng.standard_normal((3, 4))
    w = rng.random((3, 4))
    _compare(TF.mse_loss, F.mse_loss, [x, y], grad_idx=(0,), reduction=reduction, weight=w, tol=1e-12)


def test_mse_broadcasts_a_smaller_target_with_torchs_warning(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    y = rng.standard_normal(4).astype(np.float32)
    with pytest.warns(UserWarning) as record:
        _compare(TF.mse_loss, F.mse_loss, [x, y], grad_idx=(0, 1))
    messages = [str(r.message) for r in record]
    expected = (
        "Using a target size (mininn.Size([4])) that is different to the input size "
        "(mininn.Size([3, 4])). This will likely lead to incorrect results due to broadcasting. "
        "Please ensure they have the same size."
    )
    assert expected in messages


def test_integer_target_is_promoted_to_the_input_dtype(rng):
    x = rng.standard_normal(5).astype(np.float32)
    y = np.arange(5)
    out = F.mse_loss(mininn.tensor(x), mininn.tensor(y))
    assert out.dtype == mininn.float32
    assert out.item() == pytest.approx(TF.mse_loss(torch.tensor(x), torch.tensor(y)).item(), rel=1e-6)


def test_invalid_reduction_raises_torchs_value_error():
    x = mininn.ones(2)
    with pytest.raises(ValueError) as err:
        F.mse_loss(x, x, reduction="foo")
    assert err.value.args[0] == "foo is not a valid value for reduction"
    with pytest.raises(ValueError, match="^bar is not a valid value for reduction$"):
        nn.CrossEntropyLoss(reduction="bar")(mininn.ones(2, 3), mininn.tensor([0, 1]))


def test_legacy_size_average_and_reduce_pick_the_reduction_and_warn():
    x = mininn.tensor([1.0, 2.0, 3.0])
    y = mininn.zeros(3)
    with pytest.warns(UserWarning, match=r"please use reduction='sum' instead\."):
        assert F.mse_loss(x, y, size_average=False).item() == 14.0
    with pytest.warns(UserWarning, match=r"please use reduction='none' instead\."):
        assert F.l1_loss(x, y, reduce=False).shape == (3,)
    with pytest.warns(UserWarning, match=r"reduction='sum'"):
        assert nn.MSELoss(size_average=False).reduction == "sum"


# ---- cross-entropy / nll -----------------------------------------------------------------
CE_OPTIONS = [
    {},
    {"weight": "w"},
    {"ignore_index": 2},
    {"weight": "w", "ignore_index": 1},
    {"label_smoothing": 0.2},
    {"label_smoothing": 0.3, "weight": "w"},
    {"label_smoothing": 0.1, "weight": "w", "ignore_index": 0},
]


def _ce_kwargs(options: dict, n_classes: int, dtype) -> dict:
    w = np.linspace(0.5, 2.0, n_classes).astype(dtype)
    return {k: (w if v == "w" else v) for k, v in options.items()}


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("options", CE_OPTIONS, ids=str)
def test_cross_entropy_with_class_indices_matches_torch(rng, options, reduction):
    x = rng.standard_normal((6, 4)).astype(np.float32)
    t = np.array([0, 1, 2, 3, 2, 1])
    kwargs = _ce_kwargs(options, 4, np.float32)
    _compare(TF.cross_entropy, F.cross_entropy, [x, t], reduction=reduction, **kwargs)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_on_spatial_inputs_matches_torch(rng, reduction):
    x = rng.standard_normal((2, 4, 3, 5))
    t = rng.integers(0, 4, (2, 3, 5))
    kwargs = _ce_kwargs({"weight": "w", "ignore_index": 3, "label_smoothing": 0.1}, 4, np.float64)
    _compare(TF.cross_entropy, F.cross_entropy, [x, t], reduction=reduction, tol=1e-12, **kwargs)
    x3 = rng.standard_normal((2, 4, 3))
    t3 = rng.integers(0, 4, (2, 3))
    _compare(TF.cross_entropy, F.cross_entropy, [x3, t3], reduction=reduction, tol=1e-12)


def test_cross_entropy_of_one_unbatched_sample_matches_torch(rng):
    x = rng.standard_normal(5).astype(np.float32)
    _compare(TF.cross_entropy, F.cross_entropy, [x, np.array(3)])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("options", [{}, {"weight": "w"}, {"label_smoothing": 0.25, "weight": "w"}],
                         ids=str)
def test_cross_entropy_with_class_probabilities_matches_torch_including_target_grad(
    rng, options, reduction
):
    x = rng.standard_normal((5, 4))
    p = rng.random((5, 4))
    p /= p.sum(axis=1, keepdims=True)
    kwargs = _ce_kwargs(options, 4, np.float64)
    _compare(TF.cross_entropy, F.cross_entropy, [x, p], grad_idx=(0, 1), reduction=reduction,
             tol=1e-12, **kwargs)


def test_cross_entropy_mean_over_only_ignored_targets_is_nan_like_torch():
    x = mininn.randn(2, 3)
    t = mininn.tensor([-100, -100])
    assert np.isnan(F.cross_entropy(x, t).item())
    assert np.isnan(F.cross_entropy(x, t, label_smoothing=0.1).item())
    assert F.cross_entropy(x, t, reduction="sum").item() == 0.0


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_matches_torch(rng, reduction):
    x = rng.standard_normal((5, 3)).astype(np.float32)
    t = np.array([2, 0, 1, 1, 0])
    w = np.array([0.2, 1.0, 3.0], dtype=np.float32)
    _compare(TF.nll_loss, F.nll_loss, [x, t], reduction=reduction, weight=w, ignore_index=0)


def test_uint8_targets_are_accepted_like_torch(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    t = np.array([1, 3, 0], dtype=np.uint8)
    _compare(TF.nll_loss, F.nll_loss, [x, t])


def _torch_error(fn, *args, **kwargs):
    with pytest.raises(Exception) as err:
        fn(*args, **kwargs)
    return type(err.value), str(err.value)


@pytest.mark.parametrize(
    "x_shape, target, kwargs",
    [
        ((3, 4), [0, 1, 5], {}),  # out of bounds
        ((3, 4), [0, -1, 2], {}),  # negative
        ((3, 4), [0, 1], {}),  # batch mismatch
        ((3, 4), [[0, 1, 2]], {}),  # batch mismatch with a 2-D target
        ((3, 4), [0.0, 1.0, 2.0], {}),  # float indices
        ((3, 4), [0, 1, 2], {"weight": [1.0, 1.0, 1.0]}),  # wrong number of class weights
        ((2, 3, 4, 5), np.zeros((2, 4, 4), dtype=np.int64), {}),  # spatial size mismatch
        ((2, 3, 4, 5), np.zeros((2, 4), dtype=np.int64), {}),  # spatial target rank
        ((2, 3, 4), np.zeros((2, 5), dtype=np.int64), {}),  # 3-D input target size
    ],
)
def test_nll_loss_errors_match_torch(x_shape, target, kwargs):
    x = np.zeros(x_shape, dtype=np.float32)
    t = np.asarray(target)
    kw_t = {k: torch.tensor(v) for k, v in kwargs.items()}
    kw_m = {k: mininn.tensor(v) for k, v in kwargs.items()}
    expected = _torch_error(TF.nll_loss, torch.tensor(x), torch.tensor(t), **kw_t)
    got = _torch_error(F.nll_loss, mininn.tensor(x), mininn.tensor(t), **kw_m)
    assert got == expected


@pytest.mark.parametrize(
    "target, kwargs",
    [
        (np.array([0, 1, 2]), {"label_smoothing": 1.5}),
        (np.full((3, 4), 0.25, dtype=np.float32), {"ignore_index": 1}),
        (np.zeros((3, 4), dtype=np.int64), {}),
        (np.array([0.0, 1.0, 2.0], dtype=np.float32), {}),
    ],
)
def test_cross_entropy_errors_match_torch(target, kwargs):
    x = np.zeros((3, 4), dtype=np.float32)
    expected = _torch_error(TF.cross_entropy, torch.tensor(x), torch.tensor(target), **kwargs)
    got = _torch_error(F.cross_entropy, mininn.tensor(x), mininn.tensor(target), **kwargs)
    assert got == expected


# ---- binary cross-entropy ----------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_bce_with_logits_matches_torch_with_weight_and_pos_weight(rng, reduction, weighted):
    x = (rng.standard_normal((4, 3)) * 6).astype(np.float32)
    y = rng.random((4, 3)).astype(np.float32)
    kwargs = {}
    if weighted:
        kwargs = {"weight": rng.random(3).astype(np.float32),
                  "pos_weight": np.array([0.5, 2.0, 4.0], dtype=np.float32)}
    _compare(TF.binary_cross_entropy_with_logits, F.binary_cross_entropy_with_logits, [x, y],
             grad_idx=(0, 1), reduction=reduction, **kwargs)


def test_bce_with_logits_is_finite_for_huge_logits():
    x = mininn.tensor([-1000.0, 1000.0], requires_grad=True)
    y = mininn.tensor([1.0, 0.0])
    loss = F.binary_cross_entropy_with_logits(x, y, reduction="sum")
    assert loss.item() == pytest.approx(2000.0)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), [-1.0, 1.0])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_matches_torch_and_clamps_logs_at_minus_100(rng, reduction):
    p = rng.random((4, 3))
    p[0, 0], p[1, 1] = 0.0, 1.0
    y = rng.random((4, 3))
    w = rng.random((4, 3))
    _compare(TF.binary_cross_entropy, F.binary_cross_entropy, [p, y], grad_idx=(0, 1),
             reduction=reduction, weight=w, tol=1e-8)


def test_bce_size_and_range_errors_match_torch():
    cases = [
        (TF.binary_cross_entropy_with_logits, F.binary_cross_entropy_with_logits,
         np.zeros((3, 4), np.float32), np.zeros(4, np.float32)),
        (TF.binary_cross_entropy, F.binary_cross_entropy, np.zeros(3, np.float32),
         np.zeros(4, np.float32)),
        (TF.binary_cross_entropy, F.binary_cross_entropy, np.full(3, 2.0, np.float32),
         np.zeros(3, np.float32)),
    ]
    for t_fn, m_fn, x, y in cases:
        kind, message = _torch_error(t_fn, torch.tensor(x), torch.tensor(y))
        assert _torch_error(m_fn, mininn.tensor(x), mininn.tensor(y)) == (
            kind, message.replace("torch.Size", "mininn.Size"))


# ---- modules -----------------------------------------------------------------------------
def test_loss_module_reprs_and_state_dicts_match_torch():
    w = np.ones(3, dtype=np.float32)
    pairs = [
        (torch.nn.MSELoss(), nn.MSELoss()),
        (torch.nn.L1Loss(reduction="none"), nn.L1Loss(reduction="none")),
        (torch.nn.NLLLoss(), nn.NLLLoss()),
        (torch.nn.CrossEntropyLoss(weight=torch.tensor(w), label_smoothing=0.1),
         nn.CrossEntropyLoss(weight=mininn.tensor(w), label_smoothing=0.1)),
        (torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(w)),
         nn.BCEWithLogitsLoss(pos_weight=mininn.tensor(w))),
        (torch.nn.BCELoss(weight=torch.tensor(w)), nn.BCELoss(weight=mininn.tensor(w))),
    ]
    for t_mod, m_mod in pairs:
        assert repr(m_mod) == repr(t_mod)
        assert list(m_mod.state_dict()) == list(t_mod.state_dict())
        assert m_mod.reduction == t_mod.reduction
    assert nn.CrossEntropyLoss().weight is None
    assert nn.BCEWithLogitsLoss().pos_weight is None


def test_loss_modules_compute_what_the_functions_compute(rng):
    x = rng.standard_normal((4, 3)).astype(np.float32)
    t = np.array([0, 2, 1, 2])
    w = np.array([1.0, 2.0, 0.5], dtype=np.float32)
    t_mod = torch.nn.CrossEntropyLoss(weight=torch.tensor(w), ignore_index=1, label_smoothing=0.2)
    m_mod = nn.CrossEntropyLoss(weight=mininn.tensor(w), ignore_index=1, label_smoothing=0.2)
    expected = t_mod(torch.tensor(x), torch.tensor(t)).item()
    assert m_mod(mininn.tensor(x), mininn.tensor(t)).item() == pytest.approx(expected, rel=1e-6)
    y = rng.random((4, 3)).astype(np.float32)
    for t_cls, m_cls in [(torch.nn.MSELoss, nn.MSELoss), (torch.nn.L1Loss, nn.L1Loss),
                         (torch.nn.BCEWithLogitsLoss, nn.BCEWithLogitsLoss)]:
        expected = t_cls(reduction="sum")(torch.tensor(x), torch.tensor(y)).item()
        got = m_cls(reduction="sum")(mininn.tensor(x), mininn.tensor(y)).item()
        assert got == pytest.approx(expected, rel=1e-6)
    logp = TF.log_softmax(torch.tensor(x), 1)
    expected = torch.nn.NLLLoss()(logp, torch.tensor(t)).item()
    assert nn.NLLLoss()(mininn.tensor(logp.numpy()), mininn.tensor(t)).item() == pytest.approx(
        expected, rel=1e-6)


def test_class_weight_buffer_follows_the_module_to_float64():
    loss = nn.CrossEntropyLoss(weight=mininn.tensor([1.0, 2.0])).double()
    assert loss.weight.dtype == mininn.float64
    out = loss(mininn.randn(3, 2, dtype=mininn.float64), mininn.tensor([0, 1, 1]))
    assert out.dtype == mininn.float64


def test_no_warning_when_shapes_match():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.mse_loss(mininn.ones(2, 2), mininn.zeros(2, 2))


def test_nll_loss_2d_is_a_deprecated_alias_of_nll_loss():
    with pytest.warns(FutureWarning) as record:
        loss = nn.NLLLoss2d(weight=mininn.tensor([1.0, 2.0, 0.5]), ignore_index=1)
    with pytest.warns(FutureWarning) as torch_record:
        t_loss = torch.nn.NLLLoss2d(weight=torch.tensor([1.0, 2.0, 0.5]), ignore_index=1)
    assert str(record[0].message) == str(torch_record[0].message)
    assert isinstance(loss, nn.NLLLoss)
    assert repr(loss) == repr(t_loss) == "NLLLoss2d()"
    assert list(loss.state_dict()) == list(t_loss.state_dict()) == ["weight"]
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    t = np.random.default_rng(1).integers(0, 3, (2, 4, 5))
    expected = t_loss(torch.tensor(x), torch.tensor(t)).item()
    assert loss(mininn.tensor(x), mininn.tensor(t)).item() == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("kinds", ["ii", "if", "fi", "df", "fd"])
@pytest.mark.parametrize(
    "name", ["mse_loss", "l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits"]
)
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_dtype_promotion_and_integer_errors_follow_torch(name, kinds, reduction):
    make = {"i": lambda lib: lib.tensor([0, 1, 1]), "f": lambda lib: lib.tensor([0.5, 0.25, 1.0]),
            "d": lambda lib: lib.tensor([0.25, 0.5, 0.75], dtype=lib.float64)}
    outcome = []
    for lib, fn in ((torch, getattr(TF, name)), (mininn, getattr(F, name))):
        try:
            result = fn(make[kinds[0]](lib), make[kinds[1]](lib), reduction=reduction)
            outcome.append(str(result.dtype).split(".")[-1])
        except (RuntimeError, NotImplementedError) as e:
            outcome.append(f"{type(e).__name__}: {e}")
    assert outcome[1] == outcome[0]


def _signature(fn) -> list:
    import inspect

    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


LOSS_CLASSES = [*torch.nn.modules.loss.__all__, "AdaptiveLogSoftmaxWithLoss"]
LOSS_FUNCTIONS = sorted(n for n in dir(TF) if n.endswith("_loss") or n in ("cross_entropy", "kl_div",
                        "binary_cross_entropy", "binary_cross_entropy_with_logits", "linear_cross_entropy"))


@pytest.mark.parametrize("name", LOSS_CLASSES)
def test_every_loss_class_has_torchs_constructor_and_forward_signature(name):
    t_cls, m_cls = getattr(torch.nn, name), getattr(nn, name)
    assert _signature(m_cls.__init__) == _signature(t_cls.__init__)
    assert _signature(m_cls.forward) == _signature(t_cls.forward)
    assert name in nn.__all__


@pytest.mark.parametrize("name", LOSS_FUNCTIONS)
def test_every_loss_function_has_torchs_signature(name):
    assert _signature(getattr(F, name)) == _signature(getattr(TF, name))
    assert name in F.__all__


LEGACY = [n for n in LOSS_CLASSES
          if "size_average" in [name for name, _, _ in _signature(getattr(torch.nn, n).__init__)]]


@pytest.mark.parametrize("name", LEGACY)
@pytest.mark.parametrize("size_average, reduce", [(None, False), (False, None), (True, True), (False, True)])
def test_legacy_size_average_and_reduce_map_to_torchs_reduction_with_its_warning(name, size_average, reduce):
    with warnings.catch_warnings(record=True) as t_record:
        warnings.simplefilter("always")
        expected = getattr(torch.nn, name)(size_average=size_average, reduce=reduce).reduction
    with warnings.catch_warnings(record=True) as m_record:
        warnings.simplefilter("always")
        got = getattr(nn, name)(size_average=size_average, reduce=reduce).reduction
    assert got == expected
    assert [str(r.message) for r in m_record] == [str(r.message) for r in t_record]
