"""Sparse COO tensors (``sparse_coo_tensor``, ``spmm``, ``sparse.mm``/``sum``, ``to_dense``) vs torch 2.13."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import mininn
from mininn import nn

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks are implicitly disabled")

_RNG = np.random.default_rng(0)
# repeated (0, 2) and an unsorted order: an uncoalesced tensor, as graph code often builds
_INDICES = np.array([[0, 1, 1, 0, 2, 2], [2, 0, 2, 2, 1, 0]])
_VALUES = _RNG.standard_normal(6)
_DENSE = _RNG.standard_normal((3, 4))


def _np(t):
    if t.is_sparse:
        t = t.to_dense()
    return t.detach().numpy()


def _same(a, b, tol: float = 1e-12) -> None:
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)


def _torch_error(fn):
    with pytest.raises(Exception) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn(torch)
    return type(info.value), str(info.value)


def _raises_like_torch(fn) -> None:
    kind, message = _torch_error(fn)
    with pytest.raises(kind) as info:
        fn(mininn)
    assert str(info.value) == message


_PRODUCTS = {
    "spmm": lambda lib, s, d: lib.spmm(s, d),
    "mm": lambda lib, s, d: lib.mm(s, d),
    "sparse.mm": lambda lib, s, d: lib.sparse.mm(s, d),
    "matmul": lambda lib, s, d: lib.matmul(s, d),
    "operator": lambda lib, s, d: s @ d,
    "method": lambda lib, s, d: s.mm(d),
    "matvec": lambda lib, s, d: lib.matmul(s, d[:, 0]),
    "dense @ sparse": lambda lib, s, d: d.t() @ s.t(),
    "mm(dense, sparse)": lambda lib, s, d: lib.mm(d.t(), s),
    "coalesced": lambda lib, s, d: lib.sparse.mm(s.coalesce(), d),
    "to_dense": lambda lib, s, d: s.to_dense() @ d,
    "scaled": lambda lib, s, d: lib.spmm(-(s * 2.5) / 2, d),
    "transposed": lambda lib, s, d: lib.spmm(s.t(), d[:, :3].t().contiguous()),
    "row sums": lambda lib, s, d: lib.sparse.sum(s, 1).to_dense()[:, None] * d,
    "sum of sparse": lambda lib, s, d: lib.sparse.mm(s + s.coalesce(), d),
}


def _product_and_grads(lib, product, leaf: bool):
    values = lib.tensor(_VALUES, requires_grad=not leaf)
    dense = lib.tensor(_DENSE, requires_grad=True)
    s = lib.sparse_coo_tensor(lib.tensor(_INDICES), values, (3, 3), requires_grad=leaf)
    y = product(lib, s, dense)
    (y * y).sum().backward()
    grad = s.grad if leaf else values.grad
    return y, grad, dense.grad


# through a sparse tensor derived from a leaf (transposed, scaled), torch's leaf gradient of mm is dense;
# mininn's keeps the leaf's pattern (the values there are equal): see mininn/sparse/_tensor.py
_DERIVED = {"dense @ sparse", "scaled", "transposed"}


@pytest.mark.parametrize("leaf", [False, True], ids=["values-grad", "sparse-leaf"])
@pytest.mark.parametrize("name", list(_PRODUCTS))
def test_products_and_their_gradients_match_torch_in_float64(name: str, leaf: bool) -> None:
    if leaf and name in _DERIVED:
        pytest.skip("a leaf's dense gradient through a derived sparse tensor is not reproduced")
    ours = _product_and_grads(mininn, _PRODUCTS[name], leaf)
    theirs = _product_and_grads(torch, _PRODUCTS[name], leaf)
    for a, b in zip(ours, theirs):
        _same(a, b)
    if leaf:  # torch.sparse.mm keeps the leaf's pattern; torch.mm & co. give a dense gradient
        assert ours[1].is_sparse == theirs[1].is_sparse
        if ours[1].is_sparse:
            _same(ours[1]._indices(), theirs[1]._indices())


def test_float32_spmm_matches_torch() -> None:
    i, v, d = _INDICES, _VALUES.astype(np.float32), _DENSE.astype(np.float32)
    ours = mininn.spmm(mininn.sparse_coo_tensor(i, v, (3, 3)), mininn.tensor(d))
    theirs = torch.spmm(torch.sparse_coo_tensor(torch.tensor(i), torch.tensor(v), (3, 3)), torch.tensor(d))
    assert ours.dtype == mininn.float32
    _same(ours, theirs, 1e-6)


def test_parts_coalescing_and_metadata_match_torch() -> None:
    def parts(lib):
        s = lib.sparse_coo_tensor(lib.tensor(_INDICES), lib.tensor(_VALUES))
        c = s.coalesce()
        return s, c

    (s, c), (ts, tc) = parts(mininn), parts(torch)
    assert tuple(s.shape) == tuple(ts.shape) == (3, 3)
    assert (s.is_coalesced(), c.is_coalesced(), c.coalesce() is c) == (False, True, True)
    assert (s._nnz(), c._nnz(), s.sparse_dim(), s.dense_dim()) == (ts._nnz(), tc._nnz(), 2, 0)
    _same(c.indices(), tc.indices())
    _same(c.values(), tc.values())
    _same(s._indices(), ts._indices())
    _same(s, ts)
    assert s.is_sparse and not mininn.zeros(2).is_sparse
    assert s.layout is mininn.sparse_coo and mininn.zeros(2).layout is mininn.strided
    assert (s.dtype, s.device.type, s.ndim, s.dim(), s.numel(), len(s)) == (mininn.float64, "cpu", 2, 2, 9, 3)
    assert s.type() == ts.type() == "torch.sparse.DoubleTensor"
    assert mininn.sparse_coo_tensor([[0], [1]], [1.0], (2, 2)).is_coalesced()  # nnz <= 1


def test_uncoalesced_values_and_indices_raise_torchs_message() -> None:
    _raises_like_torch(lambda lib: lib.sparse_coo_tensor(lib.tensor(_INDICES), lib.tensor(_VALUES)).values())
    _raises_like_torch(lambda lib: lib.sparse_coo_tensor(lib.tensor(_INDICES), lib.tensor(_VALUES)).indices())


@pytest.mark.parametrize(
    "args",
    [
        ([[0, 1], [1, 0]], [1.0, 2.0], (1, 3)),  # index past the size
        ([[0, 1], [-1, 0]], [1.0, 2.0], (2, 2)),  # negative index
        ([0, 1], [1.0, 2.0], None),  # indices not 2-D
        ([[0, 1], [1, 0]], [1.0, 2.0, 3.0], None),  # nnz differs
        ([[0, 1], [1, 0]], [1.0, 2.0], (2,)),  # size's length
        ([[0, 1], [1, 0]], [1.0, 2.0], (2, 2, 3)),
    ],
)
def test_bad_construction_raises_torchs_checked_message(args) -> None:
    indices, values, size = args

    def build(lib):
        kwargs = {"check_invariants": True} if lib is torch else {}
        rest = () if size is None else (size,)
        return lib.sparse_coo_tensor(lib.tensor(indices), lib.tensor(values), *rest, **kwargs)

    _raises_like_torch(build)


def test_constructor_infers_dtype_size_and_takes_dtype_like_torch() -> None:
    for lib in (mininn, torch):
        ints = lib.sparse_coo_tensor([[0, 1], [1, 0]], [1, 2])
        assert str(ints.dtype).endswith("int64") and tuple(ints.shape) == (2, 2)
        assert str(lib.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2]).dtype).endswith("float32")
        doubles = lib.sparse_coo_tensor([[0, 1], [1, 0]], [1, 2], dtype=lib.float64)
        assert str(doubles.dtype).endswith("float64")
        hybrid = lib.sparse_coo_tensor([[0, 2]], lib.ones(2, 3))
        assert tuple(hybrid.shape) == (3, 3) and (hybrid.sparse_dim(), hybrid.dense_dim()) == (1, 1)


def test_hybrid_sums_and_dense_sums_match_torch() -> None:
    def sums(lib):
        values = lib.tensor(_RNG.standard_normal((3, 2)), requires_grad=True)
        h = lib.sparse_coo_tensor([[0, 2, 0], [1, 1, 1]], values, (3, 2, 2))
        outs = (lib.sparse.sum(h), lib.sparse.sum(h, 0), lib.sparse.sum(h, (0, 1)), lib.sparse.sum(h, 2),
                lib.sparse.sum(h, -1), h.sum(), h.to_dense())
        sum(((o.to_dense() if o.is_sparse else o) ** 2).sum() for o in outs).backward()
        return (*outs, values.grad)

    _RNG_STATE = _RNG.bit_generator.state
    ours = sums(mininn)
    _RNG.bit_generator.state = _RNG_STATE
    theirs = sums(torch)
    for a, b in zip(ours, theirs):
        assert a.is_sparse == b.is_sparse
        _same(a, b)


def test_dense_to_sparse_round_trip_and_gradient_match_torch() -> None:
    x = _RNG.standard_normal((3, 4)) * (_RNG.random((3, 4)) > 0.5)

    def run(lib):
        t = lib.tensor(x, requires_grad=True)
        s, h = t.to_sparse(), t.to_sparse(1)
        (s.to_dense() * 3 + h.to_dense()).sum().backward()
        return s, h, t.grad

    ours, theirs = run(mininn), run(torch)
    for a, b in zip(ours, theirs):
        _same(a, b)
    assert ours[0].is_coalesced() and ours[0]._nnz() == theirs[0]._nnz()
    _same(ours[0].indices(), theirs[0].indices())
    assert ours[1].dense_dim() == theirs[1].dense_dim() == 1
    t = mininn.zeros(2)
    assert t.to_dense() is t and ours[0].to_sparse() is ours[0]


def test_sparse_conversions_keep_layout_and_follow_torch() -> None:
    s = mininn.sparse_coo_tensor(_INDICES, _VALUES.astype(np.float32))
    d = s.double()
    assert d.is_sparse and d.dtype == mininn.float64 and s.to(mininn.float32) is s
    assert s.detach().is_sparse and s.clone()._nnz() == s._nnz()
    _same(s.to(dtype=mininn.float64), d)
    g = mininn.sparse_coo_tensor(_INDICES, _VALUES, requires_grad=True)
    assert g.is_leaf and g.requires_grad and g.grad is None
    assert not g.detach().requires_grad
    copied = copy.deepcopy(g)
    assert copied.requires_grad and copied._values() is not g._values()
    _same(copied, g)


def test_sparse_leaf_grad_resets_and_accumulates_like_a_dense_leaf() -> None:
    s = mininn.sparse_coo_tensor(_INDICES, _VALUES, (3, 3), requires_grad=True)
    d = mininn.tensor(_DENSE)
    mininn.sparse.mm(s, d).sum().backward()
    first = s.grad.to_dense().numpy().copy()
    mininn.sparse.mm(s, d).sum().backward()
    np.testing.assert_allclose(s.grad.to_dense().numpy(), 2 * first)
    s.grad = None
    assert s.grad is None
    built = mininn.sparse_coo_tensor(_INDICES, mininn.tensor(_VALUES, requires_grad=True))
    assert not built.is_leaf and built.grad_fn is not None and built.grad is None


def test_repr_matches_torchs_layout_of_the_text() -> None:
    def text(lib):
        s = lib.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], dtype=lib.float64, requires_grad=True)
        return repr(s)

    assert text(mininn).replace("mininn.", "torch.") == text(torch)


@pytest.mark.parametrize(
    ("op", "name"),
    [
        (lambda s: mininn.exp(s), "exp"),
        (lambda s: s.sigmoid(), "sigmoid"),
        (lambda s: mininn.relu(s), "relu"),
        (lambda s: s.reshape(-1), "reshape"),
        (lambda s: mininn.cat([s, s]), "cat"),
        (lambda s: nn.Linear(3, 2)(s), "linear"),
        (lambda s: s.numpy(), "numpy"),
        (lambda s: mininn.ones(3) * s, "mul"),
    ],
)
def test_unsupported_ops_name_the_op_and_point_to_to_dense(op, name: str) -> None:
    s = mininn.sparse_coo_tensor(_INDICES, _VALUES.astype(np.float32), (3, 3))
    with pytest.raises(NotImplementedError) as info:
        op(s)
    assert str(info.value).startswith(f"{name}(): ") and ".to_dense()" in str(info.value)


def test_products_check_shapes_and_dtypes_with_torchs_messages() -> None:
    def sparse(lib):
        return lib.sparse_coo_tensor(lib.tensor(_INDICES), lib.tensor(_VALUES.astype(np.float32)), (3, 3))

    _raises_like_torch(lambda lib: lib.spmm(sparse(lib), lib.ones(4, 2)))
    _raises_like_torch(lambda lib: lib.mm(sparse(lib), lib.ones(3, 2, dtype=lib.float64)))
    _raises_like_torch(lambda lib: lib.sparse.mm(sparse(lib), lib.ones(3)))
    _raises_like_torch(lambda lib: sparse(lib) + lib.ones(3, 3))
    _raises_like_torch(lambda lib: lib.sparse_coo_tensor(lib.tensor([[0, 2]]), lib.ones(2, 3)).t())
    hybrid = mininn.sparse_coo_tensor([[0, 2]], mininn.ones(2, 3))
    with pytest.raises(RuntimeError, match="matrices expected"):
        mininn.mm(hybrid, mininn.ones(3, 2))


def test_dense_plus_sparse_and_sparse_plus_sparse_match_torch() -> None:
    def run(lib):
        s = lib.sparse_coo_tensor(lib.tensor(_INDICES), lib.tensor(_VALUES), (3, 3))
        return lib.ones(3, 3, dtype=lib.float64) + s, s + s, s - s.coalesce() * 2

    for a, b in zip(run(mininn), run(torch)):
        assert a.is_sparse == b.is_sparse
        _same(a, b)


def test_legacy_sparse_constructors_warn_and_build_like_torch() -> None:
    for lib in (mininn, torch):
        with pytest.warns(UserWarning, match="torch.sparse.SparseTensor"):
            s = lib.sparse.FloatTensor(lib.tensor(_INDICES), lib.tensor(_VALUES.astype(np.float32)),
                                       lib.Size([3, 3]) if lib is torch else (3, 3))
        assert s.is_sparse and str(s.dtype).endswith("float32") and tuple(s.shape) == (3, 3)
        with pytest.warns(UserWarning, match="torch.sparse_coo_tensor.shape, dtype=, device="):
            empty = lib.sparse.FloatTensor(2, 3)
        assert empty._nnz() == 0 and tuple(empty.shape) == (2, 3)
        assert empty.to_dense().abs().sum().item() == 0


def test_a_gcn_layer_with_a_sparse_buffer_moves_with_the_module() -> None:
    class GraphConv(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(mininn.randn(4, 2))
            adj = mininn.sparse_coo_tensor(_INDICES, _VALUES.astype(np.float32), (3, 3))
            self.register_buffer("adj", adj, persistent=False)

        def forward(self, x):
            return mininn.spmm(self.adj, x @ self.weight)

    layer = GraphConv().double()
    assert layer.adj.is_sparse and layer.adj.dtype == mininn.float64
    y = layer(mininn.tensor(_DENSE))
    expected = layer.adj.to_dense().numpy() @ (_DENSE @ layer.weight.detach().numpy())
    np.testing.assert_allclose(y.detach().numpy(), expected, rtol=1e-12)
    assert "adj" not in layer.state_dict()
    copy.deepcopy(layer)


def test_requires_grad_of_a_built_sparse_tensor_follows_torchs_leaf_rules() -> None:
    for lib in (mininn, torch):
        values = lib.tensor(_VALUES, requires_grad=True)
        built = lib.sparse_coo_tensor(lib.tensor(_INDICES), values, (3, 3))
        built.requires_grad_(True)  # already requires grad: allowed
        with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
            built.requires_grad_(False)
        assert values.requires_grad and values.is_leaf
        plain = lib.sparse_coo_tensor(lib.tensor(_INDICES), lib.tensor(_VALUES), (3, 3))
        assert plain.is_leaf and not plain.requires_grad
        plain.requires_grad_()
        assert plain.is_leaf and plain.requires_grad and plain.grad is None
