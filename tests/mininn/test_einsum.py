"""einsum against torch 2.13: every equation form, gradients, broadcasting and torch's messages."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from tests.mininn._tensor_parity import run_both
from tests.mininn.nn._layer_parity import same_error

torch = pytest.importorskip("torch")


def _operands(shapes, dtype):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("equation, shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),  # implicit output
    ("Ba,ab", [(2, 3), (3, 2)]),  # implicit output puts upper case first
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("ii", [(3, 3)]),  # trace
    ("ii->i", [(3, 3)]),  # diagonal
    ("iij,jk->ik", [(2, 2, 3), (3, 4)]),
    ("i...i->...i", [(2, 3, 2)]),
    ("...ij,...jk", [(5, 2, 3), (3, 4)]),
    ("ij...->...", [(2, 3, 4, 5)]),
    ("bij,bjk", [(5, 2, 3), (1, 3, 4)]),  # size-1 dims broadcast
    ("i,i", [(3,), (1,)]),
    ("i,j,k->ijk", [(2,), (3,), (4,)]),
    ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 5)]),
    ("i,ij->j", [(3,), (3, 4)]),
    ("ij->", [(2, 3)]),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_einsum_matches_torch_with_gradients(equation, shapes, dtype):
    run_both(lambda lib, *ops: lib.einsum(equation, *ops), *_operands(shapes, dtype))


def test_einsum_takes_a_list_of_operands_and_the_sublist_form():
    a, b = _operands([(2, 3), (3, 4)], np.float64)
    run_both(lambda lib, x, y: lib.einsum("ij,jk", [x, y]), a, b)
    run_both(lambda lib, x, y: lib.einsum(x, [0, 1], y, [1, 2], [0, 2]), a, b)
    run_both(lambda lib, x, y: lib.einsum(x, [Ellipsis, 1], y, [1, 2]), a, b)


@pytest.mark.parametrize("call", [
    lambda lib: lib.einsum("ij,jk", lib.randn(2, 3)),
    lambda lib: lib.einsum("ij", lib.randn(2, 3), lib.randn(3, 3)),
    lambda lib: lib.einsum("ijk", lib.randn(2, 3)),
    lambda lib: lib.einsum("ijk...", lib.randn(2, 3)),
    lambda lib: lib.einsum("ij,jk->ik", lib.randn(2, 3), lib.randn(4, 3)),
    lambda lib: lib.einsum("ij->ii", lib.randn(2, 3)),
    lambda lib: lib.einsum("ij->k", lib.randn(2, 3)),
    lambda lib: lib.einsum("ii->i", lib.randn(2, 3)),
    lambda lib: lib.einsum("i1", lib.randn(2, 3)),
    lambda lib: lib.einsum("ij,j1->i", lib.randn(2, 3), lib.randn(3, 3)),
    lambda lib: lib.einsum("i,i", lib.ones(2), lib.ones(2, dtype=lib.float64)),
])
def test_einsum_misuse_raises_torchs_error(call):
    same_error(lambda: call(torch), lambda: call(mininn))
