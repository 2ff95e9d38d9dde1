"""Margin and embedding losses (functional and modules) against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn
from tests.mininn.nn._layer_parity import same_error
from tests.mininn.nn._loss_parity import check_loss, same_loss_error

torch = pytest.importorskip("torch")
TF = torch.nn.functional

REDUCTIONS = ["none", "mean", "sum"]
DTYPES = [np.float32, np.float64]


def _data(dtype):
    rng = np.random.default_rng(0)
    x1, x2, x3 = rng.standard_normal((3, 4, 5)).astype(dtype)
    signs = np.where(rng.random((4, 5)) > 0.5, 1.0, -1.0).astype(dtype)
    rows = np.array([1.0, -1.0, -1.0, 1.0], dtype)
    labels = np.array([0, 4, 2, 2])
    bits = (rng.random((4, 5)) > 0.5).astype(dtype)
    lists = np.array([[3, 0, -1, 1, 2], [1, 2, 3, 0, 4], [-1, 0, 0, 0, 0], [4, 4, 1, -1, 0]])
    return dict(x1=x1, x2=x2, x3=x3, signs=signs, rows=rows, labels=labels, bits=bits, lists=lists)


# (name, argument keys, indices of differentiable arguments, keyword arguments)
CASES = [
    ("hinge_embedding_loss", ["x1", "signs"], (0,), {"margin": 0.5}),
    ("soft_margin_loss", ["x1", "signs"], (0,), {}),
    ("margin_ranking_loss", ["x1", "x2", "signs"], (0, 1), {"margin": 0.3}),
    ("multi_margin_loss", ["x1", "labels"], (0,), {"p": 1, "margin": 0.7}),
    ("multi_margin_loss", ["x1", "labels"], (0,), {"p": 2, "weight": "class_weight"}),
    ("multilabel_margin_loss", ["x1", "lists"], (0,), {}),
    ("multilabel_soft_margin_loss", ["x1", "bits"], (0,), {}),
    ("multilabel_soft_margin_loss", ["x1", "bits"], (0,), {"weight": "class_weight"}),
    ("cosine_embedding_loss", ["x1", "x2", "rows"], (0, 1), {"margin": -0.2}),
    ("triplet_margin_loss", ["x1", "x2", "x3"], (0, 1, 2), {"margin": 2.0}),
    ("triplet_margin_loss", ["x1", "x2", "x3"], (0, 1, 2), {"p": 1, "swap": True, "margin": 3.0}),
    ("triplet_margin_loss", ["x1", "x2", "x3"], (0, 1, 2), {"p": 3.0, "eps": 1e-3, "margin": 2.0}),
    ("triplet_margin_with_distance_loss", ["x1", "x2", "x3"], (0, 1, 2), {"swap": True, "margin": 2.0}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name, keys, grad_idx, kwargs", CASES, ids=lambda c: str(c))
def test_margin_losses_match_torch_values_and_grads(dtype, reduction, name, keys, grad_idx, kwargs):
    data = _data(dtype)
    class_weight = np.linspace(0.5, 2.0, 5).astype(dtype)
    kwargs = {k: (class_weight if v == "class_weight" else v) for k, v in kwargs.items()}
    check_loss(getattr(TF, name), getattr(F, name), [data[k] for k in keys], grad_idx, reduction=reduction,
               **kwargs)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "name, arrays",
    [
        ("multi_margin_loss", [np.arange(5.0) / 3, np.array(2)]),
        ("multi_margin_loss", [np.arange(5.0) / 3, np.array([4])]),
        ("multilabel_margin_loss", [np.arange(5.0) / 3, np.array([2, 0, -1, 1, 1])]),
        ("multilabel_soft_margin_loss", [np.arange(5.0) / 3, np.array([1.0, 0, 0, 1, 1])]),
        ("cosine_embedding_loss", [np.arange(5.0) / 3, np.linspace(-1, 1, 5), np.array(-1.0)]),
        ("triplet_margin_loss", [np.arange(5.0) / 3, np.zeros(5), np.ones(5)]),
        ("margin_ranking_loss", [np.array(0.2), np.array(0.5), np.array(1.0)]),
    ],
)
def test_unbatched_inputs_match_torch(reduction, name, arrays):
    grad_idx = (0, 1) if name in ("cosine_embedding_loss", "margin_ranking_loss") else (0,)
    check_loss(getattr(TF, name), getattr(F, name), arrays, grad_idx, reduction=reduction)


def test_triplet_margin_with_distance_loss_takes_any_distance_function():
    data = _data(np.float64)

    def t_cosine(a, b):
        return 1 - TF.cosine_similarity(a, b)

    def m_cosine(a, b):
        dot = (a * b).sum(-1)
        return 1 - dot / ((a * a).sum(-1) * (b * b).sum(-1)).sqrt()

    check_loss(lambda *a, **k: TF.triplet_margin_with_distance_loss(*a, distance_function=t_cosine, **k),
               lambda *a, **k: F.triplet_margin_with_distance_loss(*a, distance_function=m_cosine, **k),
               [data["x1"], data["x2"], data["x3"]], (0, 1, 2), margin=0.5, reduction="none")


_LONG = np.int64
ERRORS = [
    ("hinge_embedding_loss", [np.zeros((3, 4)), np.ones(3)], {}),
    ("soft_margin_loss", [np.zeros((3, 4)), np.ones(3)], {}),
    ("margin_ranking_loss", [np.zeros(3), np.zeros(3), np.ones(2)], {}),
    ("margin_ranking_loss", [np.zeros((3, 1)), np.zeros(3), np.ones(3)], {}),
    ("multi_margin_loss", [np.zeros((3, 4)), np.array([0, 1])], {}),
    ("multi_margin_loss", [np.zeros((3, 4)), np.zeros((3, 1), _LONG)], {}),
    ("multi_margin_loss", [np.zeros((3, 4)), np.array([0, 1, 2])], {"p": 3}),
    ("multi_margin_loss", [np.zeros((3, 4)), np.array([0, 1, 4])], {}),
    ("multi_margin_loss", [np.zeros((3, 4)), np.array([0, 1, 2])], {"weight": np.ones(3)}),
    ("multi_margin_loss", [np.zeros((3, 4)), np.array([0, 1, 2])], {"weight": np.ones((2, 2))}),
    ("multi_margin_loss", [np.zeros((3, 4, 2)), np.array([0, 1, 2])], {}),
    ("multi_margin_loss", [np.zeros((3, 0)), np.array([0, 0, 0])], {}),
    ("multi_margin_loss", [np.zeros((3, 4)), np.array([0.0, 1.0, 2.0])], {}),
    ("multilabel_margin_loss", [np.zeros((3, 4)), np.zeros((3, 3), _LONG)], {}),
    ("multilabel_margin_loss", [np.zeros((3, 4, 2)), np.zeros((3, 4, 2), _LONG)], {}),
    ("multilabel_margin_loss", [np.zeros((3, 4)), np.zeros((3, 4))], {}),
    ("multilabel_margin_loss", [np.zeros((3, 4)), np.full((3, 4), 4)], {}),
    ("multilabel_margin_loss", [np.zeros((3, 4)), np.full((3, 4), -2)], {}),
    ("multilabel_soft_margin_loss", [np.zeros((3, 4)), np.zeros((3, 2))], {}),
    ("multilabel_soft_margin_loss", [np.zeros(()), np.zeros(())], {}),
    ("multilabel_soft_margin_loss", [np.zeros((3, 4)), np.zeros((3, 4))], {"weight": np.ones(3)}),
    ("multilabel_soft_margin_loss", [np.zeros((3, 4), _LONG), np.zeros((3, 4))], {}),
    ("cosine_embedding_loss", [np.zeros((3, 4)), np.zeros((3, 4)), np.ones(2)], {}),
    ("cosine_embedding_loss", [np.zeros((3, 4)), np.zeros((3, 5)), np.ones(3)], {}),
    ("cosine_embedding_loss", [np.zeros(4), np.zeros(4), np.ones(1)], {}),
    ("cosine_embedding_loss", [np.zeros((3, 4)), np.zeros((3, 4)), np.ones(())], {}),
    ("cosine_embedding_loss", [np.zeros((2, 3, 4)), np.zeros((2, 3, 4)), np.ones((2, 3))], {}),
    ("triplet_margin_loss", [np.zeros((3, 4)), np.zeros((3, 4)), np.zeros(4)], {}),
    ("triplet_margin_loss", [np.zeros((3, 4)), np.zeros((3, 5)), np.zeros((3, 4))], {}),
    ("triplet_margin_loss", [np.zeros((3, 4)), np.zeros((3, 4)), np.zeros((3, 4))], {"margin": -1.0}),
    ("triplet_margin_with_distance_loss", [np.zeros((3, 4)), np.zeros((3, 4)), np.zeros(4)], {}),
    ("triplet_margin_with_distance_loss", [np.zeros((3, 4))] * 3, {"margin": 0.0}),
    ("hinge_embedding_loss", [np.arange(2), np.array([1, -1])], {}),
    ("soft_margin_loss", [np.arange(2), np.array([1, -1])], {}),
    ("soft_margin_loss", [np.zeros(2), np.ones(2)], {"reduction": "avg"}),
]


@pytest.mark.parametrize("name, arrays, kwargs", ERRORS, ids=lambda c: str(c)[:40])
def test_bad_shapes_and_arguments_raise_torchs_errors(name, arrays, kwargs):
    same_loss_error(getattr(TF, name), getattr(F, name), arrays, **kwargs)


@pytest.mark.parametrize("kinds", ["if", "fi", "df", "fd", "ii"])
def test_hinge_and_soft_margin_results_keep_the_input_dtype_like_torch(kinds):
    make = {"i": lambda lib: lib.tensor([1, -1, 1]), "f": lambda lib: lib.tensor([0.5, -1.0, 1.0]),
            "d": lambda lib: lib.tensor([0.25, 1.0, -1.0], dtype=lib.float64)}
    for name in ("hinge_embedding_loss", "soft_margin_loss"):
        outcome = []
        for lib, fn in ((torch, getattr(TF, name)), (mininn, getattr(F, name))):
            try:
                outcome.append(str(fn(make[kinds[0]](lib), make[kinds[1]](lib), reduction="none").dtype))
            except RuntimeError as e:
                outcome.append(str(e))
        assert outcome[1].replace("mininn.", "") == outcome[0].replace("torch.", "")


# ---- modules ---------------------------------------------------------------------------------
MODULES = [
    ("HingeEmbeddingLoss", {"margin": 0.5}, ["x1", "signs"], (0,)),
    ("MarginRankingLoss", {"margin": 0.1, "reduction": "sum"}, ["x1", "x2", "signs"], (0, 1)),
    ("SoftMarginLoss", {"reduction": "none"}, ["x1", "signs"], (0,)),
    ("MultiLabelMarginLoss", {}, ["x1", "lists"], (0,)),
    ("MultiLabelSoftMarginLoss", {"weight": "class_weight"}, ["x1", "bits"], (0,)),
    ("MultiMarginLoss", {"p": 2, "margin": 0.5, "weight": "class_weight"}, ["x1", "labels"], (0,)),
    ("CosineEmbeddingLoss", {"margin": 0.1}, ["x1", "x2", "rows"], (0, 1)),
    ("TripletMarginLoss", {"margin": 1.5, "p": 1.0, "swap": True}, ["x1", "x2", "x3"], (0, 1, 2)),
]


@pytest.mark.parametrize("cls, kwargs, keys, grad_idx", MODULES, ids=lambda c: str(c)[:30])
def test_modules_match_torch_reprs_state_options_and_values(cls, kwargs, keys, grad_idx):
    data = _data(np.float32)
    w = np.linspace(0.5, 2.0, 5).astype(np.float32)
    t_mod = getattr(torch.nn, cls)(**{k: (torch.tensor(w) if v == "class_weight" else v)
                                      for k, v in kwargs.items()})
    m_mod = getattr(nn, cls)(**{k: (mininn.tensor(w) if v == "class_weight" else v)
                                for k, v in kwargs.items()})
    assert repr(m_mod) == repr(t_mod)
    assert list(m_mod.state_dict()) == list(t_mod.state_dict())
    for attr in ("reduction", "margin", "p", "eps", "swap"):
        assert getattr(m_mod, attr, None) == getattr(t_mod, attr, None)
    check_loss(t_mod, m_mod, [data[k] for k in keys], grad_idx)


def test_triplet_margin_with_distance_module_holds_its_distance_function():
    data = _data(np.float64)
    t_mod = torch.nn.TripletMarginWithDistanceLoss(margin=2.0, swap=True)
    m_mod = nn.TripletMarginWithDistanceLoss(margin=2.0, swap=True)
    assert repr(m_mod) == repr(t_mod)
    assert list(m_mod.state_dict()) == []
    check_loss(t_mod, m_mod, [data["x1"], data["x2"], data["x3"]], (0, 1, 2))
    custom = nn.TripletMarginWithDistanceLoss(distance_function=lambda a, b: (a - b).abs().sum(-1))
    assert repr(custom) == "TripletMarginWithDistanceLoss()"


@pytest.mark.parametrize(
    "cls, kwargs",
    [
        ("MultiMarginLoss", {"p": 3}),
        ("MultiMarginLoss", {"weight": "2d"}),
        ("TripletMarginLoss", {"margin": 0.0}),
        ("TripletMarginWithDistanceLoss", {"margin": -1.0}),
    ],
)
def test_module_constructors_raise_torchs_errors(cls, kwargs):
    def build(lib, module):
        args = {k: (lib.ones(2, 2) if v == "2d" else v) for k, v in kwargs.items()}
        return lambda: getattr(module, cls)(**args)

    same_error(build(torch, torch.nn), build(mininn, nn))


def test_legacy_arguments_pick_the_reduction_with_torchs_warning():
    with pytest.warns(UserWarning, match=r"please use reduction='sum' instead\."):
        assert nn.MultiLabelMarginLoss(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning, match=r"please use reduction='none' instead\."):
        out = F.hinge_embedding_loss(mininn.ones(3), mininn.ones(3), reduce=False)
    assert out.shape == (3,)
