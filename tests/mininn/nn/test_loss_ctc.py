"""``ctc_loss`` and ``CTCLoss`` against torch 2.13: padded and concatenated targets, gradients, errors."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn
from tests.mininn.nn._layer_parity import same_error
from tests.mininn.nn._loss_parity import check_loss

torch = pytest.importorskip("torch")
TF = torch.nn.functional

REDUCTIONS = ["none", "mean", "sum"]
DTYPES = [np.float32, np.float64]
T, N, C = 8, 3, 5
PADDED = np.array([[1, 1, 2, 3], [2, 4, 4, 1], [3, 1, 0, 0]])
INPUT_LENGTHS = np.array([8, 6, 4])
TARGET_LENGTHS = np.array([4, 3, 1])


def _log_probs(dtype, shape=(T, N, C)):
    logits = np.random.default_rng(0).standard_normal(shape)
    return (logits - np.log(np.exp(logits).sum(-1, keepdims=True))).astype(dtype)


def _concatenated(padded, lengths):
    return np.concatenate([row[:n] for row, n in zip(padded, lengths)])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("layout", ["padded", "concatenated"])
def test_ctc_loss_matches_torch_values_and_log_prob_grads(dtype, reduction, layout):
    targets = PADDED if layout == "padded" else _concatenated(PADDED, TARGET_LENGTHS)
    check_loss(TF.ctc_loss, F.ctc_loss, [_log_probs(dtype), targets, INPUT_LENGTHS, TARGET_LENGTHS],
               reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_another_blank_and_lengths_given_as_tuples_match_torch(reduction):
    targets = np.where(PADDED == 2, 0, PADDED)  # class 2 is the blank now
    check_loss(lambda x, y, **k: TF.ctc_loss(x, y, (8, 6, 4), (4, 3, 1), **k),
               lambda x, y, **k: F.ctc_loss(x, y, (8, 6, 4), (4, 3, 1), **k),
               [_log_probs(np.float64), targets], reduction=reduction, blank=2)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_zero_infinity_zeroes_impossible_alignments_and_their_grads(reduction):
    too_short = np.array([8, 2, 4])  # sample 1 needs at least 3 frames for "4 4 1"
    check_loss(TF.ctc_loss, F.ctc_loss, [_log_probs(np.float64), PADDED, too_short, TARGET_LENGTHS],
               reduction=reduction, zero_infinity=True)
    out = F.ctc_loss(mininn.tensor(_log_probs(np.float64)), mininn.tensor(PADDED), mininn.tensor(too_short),
                     mininn.tensor(TARGET_LENGTHS), reduction="none")
    assert np.isinf(out.numpy()[1])


def test_empty_targets_and_repeated_labels_match_torch():
    targets = np.array([[2, 2, 2, 2], [1, 1, 3, 3], [0, 0, 0, 0]])
    check_loss(TF.ctc_loss, F.ctc_loss, [_log_probs(np.float64), targets, INPUT_LENGTHS, np.array([4, 4, 0])],
               reduction="none")


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_unbatched_log_probs_match_torch(reduction):
    check_loss(TF.ctc_loss, F.ctc_loss, [_log_probs(np.float32, (T, C)), PADDED[0], np.array(8), np.array(4)],
               reduction=reduction)


def test_grads_flow_through_log_softmax_into_logits_like_torch():
    logits = np.random.default_rng(1).standard_normal((T, N, C))
    check_loss(lambda x, *a: TF.ctc_loss(x.log_softmax(2), *a),
               lambda x, *a: F.ctc_loss(F.log_softmax(x, 2), *a),
               [logits, PADDED, INPUT_LENGTHS, TARGET_LENGTHS])


_L = np.array
ERRORS = [
    ({"input_lengths": _L([9, 6, 4])}, {}),
    ({"input_lengths": _L([-1, 6, 4])}, {}),
    ({"input_lengths": _L([8, 6])}, {}),
    ({"target_lengths": _L([4, 3])}, {}),
    ({"target_lengths": _L([5, 3, 1])}, {}),
    ({"target_lengths": _L([-1, 3, 1])}, {}),
    ({"input_lengths": _L([8.0, 6.0, 4.0])}, {}),
    ({"target_lengths": _L([4.0, 3.0, 1.0])}, {}),
    ({"targets": PADDED[None]}, {}),
    ({"targets": PADDED[:2]}, {}),
    ({"targets": _L([1, 2, 3, 4])}, {}),
    ({}, {"blank": 5}),
    ({}, {"blank": -1}),
    ({}, {"reduction": "avg"}),
    ({"log_probs": np.zeros((T, N, C), np.int64)}, {}),
    ({"input_lengths": _L([9, 6, 4]), "target_lengths": _L([5, 3, 1])}, {}),
]


@pytest.mark.parametrize("override, kwargs", ERRORS, ids=lambda c: str(c)[:40])
def test_bad_arguments_raise_torchs_errors(override, kwargs):
    args = {"log_probs": _log_probs(np.float32), "targets": PADDED, "input_lengths": INPUT_LENGTHS,
            "target_lengths": TARGET_LENGTHS, **override}
    same_error(lambda: TF.ctc_loss(*[torch.tensor(a) for a in args.values()], **kwargs),
               lambda: F.ctc_loss(*[mininn.tensor(a) for a in args.values()], **kwargs))


def test_ctc_module_keeps_its_options_and_matches_torch():
    t_mod = torch.nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    m_mod = nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    assert repr(m_mod) == repr(t_mod) == "CTCLoss()"
    assert list(m_mod.state_dict()) == []
    for attr in ("blank", "reduction", "zero_infinity"):
        assert getattr(m_mod, attr) == getattr(t_mod, attr)
    check_loss(t_mod, m_mod, [_log_probs(np.float32), PADDED, INPUT_LENGTHS, TARGET_LENGTHS])
