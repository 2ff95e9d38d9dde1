"""``linear_cross_entropy``, ``LinearCrossEntropyOptions``, ``LinearCrossEntropyLoss`` against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn
from tests.mininn.nn._layer_parity import same_error, state_layout, to_numpy, tol, twin
from tests.mininn.nn._loss_parity import check_loss, same_loss_error

torch = pytest.importorskip("torch")
TF = torch.nn.functional

REDUCTIONS = ["none", "mean", "sum"]
DTYPES = [np.float32, np.float64]


def _rng():
    return np.random.default_rng(0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "options",
    [{}, {"weight": "w", "label_smoothing": 0.2}, {"ignore_index": 1}, {"bias": True, "options": "opts"}],
    ids=str,
)
def test_linear_cross_entropy_matches_torch_grads_of_input_weight_and_bias(dtype, reduction, options):
    rng = _rng()
    x = rng.standard_normal((6, 4)).astype(dtype)
    w = rng.standard_normal((5, 4)).astype(dtype)
    target = np.array([0, 1, 4, 3, 1, 2])
    arrays = [x, w, target] + ([rng.standard_normal(5).astype(dtype)] if options.get("bias") else [])
    kwargs = {k: v for k, v in options.items() if k not in ("weight", "bias", "options")}
    if "weight" in options:
        kwargs["weight"] = np.linspace(0.5, 2.0, 5).astype(dtype)

    def call(fn, opts_cls):
        def run(x, w, t, *bias, **k):
            opts = opts_cls(batch_chunk_size=2, chunking_method=None) if "options" in options else None
            return fn(x, w, t, linear_bias=bias[0] if bias else None, options=opts, **k)
        return run

    grads = (0, 1, 3) if options.get("bias") else (0, 1)
    check_loss(call(TF.linear_cross_entropy, torch.nn.LinearCrossEntropyOptions),
               call(F.linear_cross_entropy, nn.LinearCrossEntropyOptions), arrays, grads, reduction=reduction,
               **kwargs)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_k_dimensional_weight_and_bias_give_a_k_dimensional_loss(reduction):
    rng = _rng()
    x, w = rng.standard_normal((3, 4)), rng.standard_normal((5, 2, 3, 4))
    target, bias = rng.integers(0, 5, (3, 2, 3)), rng.standard_normal((5, 2, 3))
    check_loss(lambda x, w, t, b, **k: TF.linear_cross_entropy(x, w, t, linear_bias=b, **k),
               lambda x, w, t, b, **k: F.linear_cross_entropy(x, w, t, linear_bias=b, **k),
               [x, w, target, bias], (0, 1, 3), reduction=reduction)


def test_unbatched_input_and_probability_targets_match_torch():
    rng = _rng()
    x, w = rng.standard_normal(4), rng.standard_normal((5, 4))
    check_loss(TF.linear_cross_entropy, F.linear_cross_entropy, [x, w, np.array(3)], (0, 1))
    probs = rng.dirichlet(np.ones(5), 3)
    check_loss(TF.linear_cross_entropy, F.linear_cross_entropy, [rng.standard_normal((3, 4)), w, probs],
               (0, 1, 2), label_smoothing=0.1)


CHUNKINGS = [{"batch_chunk_size": 3, "chunking_method": None}, {"chunking_method": "aspect_ratio"}, {}]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("chunking", CHUNKINGS, ids=str)
@pytest.mark.parametrize("extra", [{}, {"weight": "w", "ignore_index": 2}, {"bias": True}], ids=str)
def test_chunked_path_matches_torchs_chunked_path(dtype, reduction, chunking, extra):
    rng = _rng()
    x = rng.standard_normal((7, 3)).astype(dtype)
    w = rng.standard_normal((6, 3)).astype(dtype)
    target = np.array([0, 1, 5, 2, 2, 4, 3])
    bias = rng.standard_normal(6).astype(dtype)
    class_weight = np.linspace(0.5, 2.0, 6).astype(dtype)

    def call(fn, opts_cls, wrap):
        def run(x, w, *bias_arg, **k):
            opts = opts_cls(**chunking)
            weight = wrap(class_weight) if "weight" in extra else None
            return fn(x, w, wrap(target), linear_bias=bias_arg[0] if bias_arg else None, weight=weight,
                      ignore_index=extra.get("ignore_index"), options=opts, **k)
        return run

    arrays = [x, w] + ([bias] if extra.get("bias") else [])
    check_loss(call(TF.linear_cross_entropy, torch.nn.LinearCrossEntropyOptions, torch.tensor),
               call(F.linear_cross_entropy, nn.LinearCrossEntropyOptions, mininn.tensor), arrays,
               tuple(range(len(arrays))), reduction=reduction)


def _with_options(fn, options_cls, **opts):
    """``fn`` (a ``linear_cross_entropy``) with ``options=options_cls(**opts)`` bound."""
    return lambda *args, **kwargs: fn(*args, options=options_cls(**opts), **kwargs)


def _both_with_options(**opts):
    return (_with_options(TF.linear_cross_entropy, torch.nn.LinearCrossEntropyOptions, **opts),
            _with_options(F.linear_cross_entropy, nn.LinearCrossEntropyOptions, **opts))


def test_chunked_path_of_an_unbatched_input_matches_torch():
    rng = _rng()
    arrays = [rng.standard_normal(3), rng.standard_normal((6, 3)), np.array(4)]
    check_loss(*_both_with_options(batch_chunk_size=1), arrays, (0, 1), reduction="none")


def test_unsupported_options_fall_back_to_the_reference_path_with_torchs_warning():
    rng = _rng()
    x, w, t = rng.standard_normal((4, 3)), rng.standard_normal((5, 3)), np.array([0, 1, 4, 2])
    t_fn, m_fn = _both_with_options()
    with pytest.warns(UserWarning) as t_record:
        expected = t_fn(torch.tensor(x), torch.tensor(w), torch.tensor(t), label_smoothing=0.1)
    with pytest.warns(UserWarning) as m_record:
        got = m_fn(mininn.tensor(x), mininn.tensor(w), mininn.tensor(t), label_smoothing=0.1)
    expected_messages = [str(r.message).replace("torch.", "mininn.") for r in t_record]
    assert [str(r.message) for r in m_record] == expected_messages
    assert got.item() == pytest.approx(expected.item(), rel=1e-12)


def test_conflicting_chunk_size_and_method_raise_torchs_error():
    arrays = [np.zeros((8, 2)), np.zeros((4, 2)), np.zeros(8, np.int64)]
    same_loss_error(*_both_with_options(batch_chunk_size=3, chunking_method="aspect_ratio"), arrays)


@pytest.mark.parametrize("target", [np.array([0, 1, 7, 2]), np.array([0, -3, 1, 2])], ids=str)
def test_chunked_path_out_of_range_targets_raise_torchs_error(target):
    same_loss_error(*_both_with_options(), [np.zeros((4, 3)), np.zeros((5, 3)), target])


@pytest.mark.parametrize(
    "shapes, target, kwargs",
    [
        ([(3, 4), (5, 3)], np.array([0, 1, 2]), {}),
        ([(2, 3, 4), (5, 4)], np.zeros((2, 3), np.int64), {}),
        ([(4,), (5, 2, 4)], np.zeros(2, np.int64), {}),
        ([(3, 4), (5, 4)], np.full((3, 5), 0.2), {"ignore_index": 1}),
        ([(3, 4), (5, 4)], np.array([0, 1, 2]), {"label_smoothing": 2.0}),
        ([(3, 4), (5, 4)], np.array([0, 1, 2]), {"weight": np.ones(3)}),
        ([(3, 4), (5, 4)], np.array([0, 1, 2]), {"reduction": "avg"}),
    ],
)
def test_bad_shapes_and_arguments_raise_torchs_errors(shapes, target, kwargs):
    arrays = [np.zeros(s) for s in shapes] + [target]
    same_loss_error(TF.linear_cross_entropy, F.linear_cross_entropy, arrays, **kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [{"acc_policy": "fast"}, {"chunking_method": "rows"}, {"chunking_method": "aspect_ratio:0"},
     {"batch_chunk_size": 0}, {"batch_chunk_size": 2.0}],
    ids=str,
)
def test_options_validate_like_torch(kwargs):
    same_error(lambda: torch.nn.LinearCrossEntropyOptions(**kwargs),
               lambda: nn.LinearCrossEntropyOptions(**kwargs))


def test_options_are_a_frozen_dataclass_with_torchs_repr():
    opts = nn.LinearCrossEntropyOptions(chunking_method="aspect_ratio:4", acc_policy="compact")
    assert repr(opts) == repr(torch.nn.LinearCrossEntropyOptions(chunking_method="aspect_ratio:4",
                                                                 acc_policy="compact"))
    assert opts == nn.LinearCrossEntropyOptions(chunking_method="aspect_ratio:4", acc_policy="compact")
    with pytest.raises(AttributeError):
        opts.batch_chunk_size = 3


# ---- module ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "kwargs, target_shape",
    [({}, (6,)), ({"bias": True, "out_features": (2, 3), "label_smoothing": 0.1}, (6, 2, 3)),
     ({"weight": "w", "ignore_index": 2, "reduction": "sum"}, (6,))],
    ids=str,
)
def test_module_matches_torch_repr_state_values_and_parameter_grads(dtype, kwargs, target_shape):
    w = np.linspace(0.5, 2.0, 5).astype(dtype)
    t_kwargs = {k: (torch.tensor(w) if v == "w" else v) for k, v in kwargs.items()}
    m_kwargs = {k: (mininn.tensor(w) if v == "w" else v) for k, v in kwargs.items()}
    torch_dtype = getattr(torch, np.dtype(dtype).name)
    t_mod = torch.nn.LinearCrossEntropyLoss(4, 5, dtype=torch_dtype, **t_kwargs)
    m_mod = nn.LinearCrossEntropyLoss(4, 5, dtype=getattr(mininn, np.dtype(dtype).name), **m_kwargs)
    twin(t_mod, m_mod)
    assert repr(m_mod) == repr(t_mod)
    assert state_layout(m_mod) == [(k, s, d.replace("torch.", "")) for k, s, d in state_layout(t_mod)]
    rng = _rng()
    x = rng.standard_normal((6, 4)).astype(dtype)
    target = rng.integers(0, 5, target_shape)
    check_loss(t_mod, m_mod, [x, target])
    for name, tp in t_mod.named_parameters():
        np.testing.assert_allclose(to_numpy(m_mod.get_parameter(name).grad), to_numpy(tp.grad), **tol(dtype))


def test_module_default_init_is_linears():
    loss = nn.LinearCrossEntropyLoss(64, 50, bias=True)
    bound = 1 / np.sqrt(64)
    weight, bias = loss.linear.weight.detach().numpy(), loss.linear.bias.detach().numpy()
    assert np.abs(weight).max() <= bound and np.abs(bias).max() <= bound
    assert weight.std() == pytest.approx(bound / np.sqrt(3), rel=0.05)


@pytest.mark.parametrize("kwargs", [{"weight": "w3"}, {"label_smoothing": 1.5}], ids=str)
def test_module_constructor_errors_match_torch(kwargs):
    def build(lib, module):
        args = {k: (lib.ones(3) if v == "w3" else v) for k, v in kwargs.items()}
        return lambda: module.LinearCrossEntropyLoss(4, 5, **args)

    same_error(build(torch, torch.nn), build(mininn, nn))
