"""Tensor factories against torch 2.13: dtypes inferred from data, shapes, ranges,
``*_like`` and reproducible random numbers under ``manual_seed``.
"""

import numpy as np
import pytest

import mininn

torch = pytest.importorskip("torch")


def _name(t):
    return str(t.dtype).split(".")[-1]


DATA = [
    1.5,
    3,
    True,
    [1.0, 2.0],
    [1, 2],
    [True, False],
    [1, 2.5],
    [True, 2],
    [[1, 2], [3, 4]],
    [],
    [[]],
    np.array([1, 2], dtype=np.int32),
    np.array([1.0], dtype=np.float64),
    np.float64(2.0),
    np.array(True),
]


@pytest.mark.parametrize("case", range(len(DATA)))
def test_tensor_infers_dtype_and_shape_like_torch(case):
    want = torch.tensor(DATA[case])
    got = mininn.tensor(DATA[case])
    assert _name(got) == _name(want)
    assert tuple(got.shape) == tuple(want.shape)
    assert got.tolist() == want.tolist()


def test_tensor_copies_and_takes_dtype_device_requires_grad():
    src = np.array([1.0, 2.0])
    t = mininn.tensor(src, dtype=mininn.float32, requires_grad=True)
    src[0] = 9
    assert t.tolist() == [1.0, 2.0] and t.dtype is mininn.float32 and t.requires_grad and t.is_leaf
    assert mininn.tensor([1, 2], dtype="float64").dtype is mininn.float64
    assert mininn.tensor([mininn.tensor(1.0), mininn.tensor(2.0)]).tolist() == [1.0, 2.0]
    assert mininn.tensor(mininn.tensor([1, 2])).dtype is mininn.int64


def test_from_numpy_and_as_tensor_share_memory():
    src = np.zeros(3, dtype=np.float32)
    a, b = mininn.from_numpy(src), mininn.as_tensor(src)
    src[0] = 1
    assert a.tolist()[0] == 1 and b.tolist()[0] == 1 and a.dtype is mininn.float32


SHARING = [
    ("float32", {}),
    ("float32", {"device": "cpu"}),
    ("float32", {"dtype": "float32"}),
    ("float32", {"dtype": "float32", "device": "cpu"}),
    ("float32", {"dtype": "float64"}),
    ("float32", {"dtype": "float64", "device": "cpu"}),
    ("int64", {"device": "cpu"}),
    ("int32", {}),
    ("int64", {"dtype": "int32"}),
]


@pytest.mark.parametrize(("np_dtype", "kwargs"), SHARING)
def test_as_tensor_shares_a_numpy_array_exactly_when_torch_does(np_dtype, kwargs):
    shared = {}
    for lib in (torch, mininn):
        src = np.zeros((2, 3), dtype=np_dtype)
        args = {k: getattr(lib, v) if k == "dtype" else v for k, v in kwargs.items()}
        t = lib.as_tensor(src, **args)
        src[1, 2] = 7
        shared[lib.__name__] = t.tolist()[1][2] == 7
        assert _name(t) == kwargs.get("dtype", np_dtype)
    assert shared["mininn"] == shared["torch"]


def test_as_tensor_shares_a_strided_view_and_writes_go_both_ways():
    src = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    t = mininn.as_tensor(src, device=mininn.device("cpu"))
    t.mul_(10)
    assert src[1, 1] == 60.0 and np.shares_memory(t.numpy(), src)


def test_as_tensor_returns_a_tensor_already_of_that_dtype_and_device():
    for lib in (torch, mininn):
        t = lib.zeros(3)
        assert lib.as_tensor(t, dtype=lib.float32, device="cpu") is t
        assert lib.as_tensor(t, dtype=lib.float64) is not t


def test_from_numpy_shares_memory_and_refuses_a_list_as_torch_does():
    src = np.zeros(3, dtype=np.int64)
    t = mininn.from_numpy(src)
    src[0] = 5
    assert t.tolist()[0] == 5
    for lib in (torch, mininn):
        with pytest.raises(TypeError, match=r"^expected np.ndarray \(got list\)$"):
            lib.from_numpy([1, 2])


SHAPED = {
    "zeros": lambda lib: lib.zeros(2, 3),
    "zeros_tuple": lambda lib: lib.zeros((2, 3), dtype=lib.int64),
    "ones": lambda lib: lib.ones([4]),
    "ones_dtype": lambda lib: lib.ones(2, dtype=lib.float64),
    "empty_shape": lambda lib: lib.empty(3, 1).shape,
    "full_float": lambda lib: lib.full((2, 2), 1.5),
    "full_int": lambda lib: lib.full((2,), 7),
    "full_bool": lambda lib: lib.full((2,), True),
    "arange": lambda lib: lib.arange(5),
    "arange_start_step": lambda lib: lib.arange(1, 10, 3),
    "arange_float": lambda lib: lib.arange(0, 1, 0.25),
    "arange_neg": lambda lib: lib.arange(5, 0, -2),
    "arange_float_end": lambda lib: lib.arange(3.0),
    "linspace": lambda lib: lib.linspace(0, 1, 5),
    "linspace_one": lambda lib: lib.linspace(-2, 2, 1),
    "eye": lambda lib: lib.eye(3),
    "eye_rect": lambda lib: lib.eye(2, 3),
    "zeros_like": lambda lib: lib.zeros_like(lib.ones(2, dtype=lib.int32)),
    "ones_like_dtype": lambda lib: lib.ones_like(lib.ones(2), dtype=lib.float64),
    "full_like": lambda lib: lib.full_like(lib.ones(2, 2), 3.0),
    "empty_like_shape": lambda lib: lib.empty_like(lib.ones(2, 5)).shape,
    "scalar_zeros": lambda lib: lib.zeros(()),
}


@pytest.mark.parametrize("name", sorted(SHAPED))
def test_shaped_factories_match_torch(name):
    got, want = SHAPED[name](mininn), SHAPED[name](torch)
    if isinstance(want, tuple):
        assert tuple(got) == tuple(want)
        return
    assert _name(got) == _name(want) and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(np.asarray(got.tolist(), dtype=float),
                               np.asarray(want.tolist(), dtype=float), rtol=1e-6)


def test_random_factories_have_torch_shapes_dtypes_and_ranges():
    mininn.manual_seed(0)
    assert mininn.rand(2, 3).shape == (2, 3) and mininn.rand(2).dtype is mininn.float32
    r = mininn.rand(10000)
    assert 0 <= r.min().item() and r.max().item() < 1
    n = mininn.randn(20000, dtype=mininn.float64)
    assert n.dtype is mininn.float64 and abs(n.mean().item()) < 0.05 and abs(n.std().item() - 1) < 0.05
    i = mininn.randint(3, 7, (1000,))
    assert i.dtype is mininn.int64 and set(i.tolist()) == {3, 4, 5, 6}
    assert mininn.randint(5, (2, 2)).shape == (2, 2)
    assert mininn.rand_like(mininn.ones(2, 2, dtype=mininn.float64)).dtype is mininn.float64
    assert mininn.randn_like(mininn.ones(3)).shape == (3,)
    assert mininn.randn(2, 2, requires_grad=True).requires_grad
    assert sorted(mininn.randperm(6).tolist()) == list(range(6))


def test_manual_seed_makes_every_random_source_reproducible():
    def draw():
        return (
            mininn.rand(3).tolist(),
            mininn.randn(2, 2).tolist(),
            mininn.randint(0, 100, (4,)).tolist(),
            mininn.empty(3).normal_().tolist(),
            mininn.empty(3).uniform_().tolist(),
            mininn.randperm(5).tolist(),
        )

    mininn.manual_seed(42)
    first = draw()
    mininn.manual_seed(42)
    assert draw() == first
    mininn.manual_seed(43)
    assert draw() != first
    assert mininn.initial_seed() == 43


def test_generator_objects_and_rng_state():
    g = mininn.Generator().manual_seed(7)
    a = mininn.rand(3, generator=g)
    g.manual_seed(7)
    assert mininn.equal(a, mininn.rand(3, generator=g))
    state = mininn.get_rng_state()
    x = mininn.randn(3)
    mininn.set_rng_state(state)
    assert mininn.equal(x, mininn.randn(3))


def test_default_dtype_is_used_by_float_factories():
    assert mininn.get_default_dtype() is mininn.float32
    mininn.set_default_dtype(mininn.float64)
    try:
        assert mininn.tensor(1.5).dtype is mininn.float64
        assert mininn.zeros(2).dtype is mininn.float64 and mininn.rand(2).dtype is mininn.float64
        assert mininn.arange(0.0, 1.0, 0.5).dtype is mininn.float64
        assert mininn.tensor(1).dtype is mininn.int64
    finally:
        mininn.set_default_dtype(mininn.float32)
    with pytest.raises(TypeError, match="^only floating-point types are supported as the default type$"):
        mininn.set_default_dtype(mininn.int32)
