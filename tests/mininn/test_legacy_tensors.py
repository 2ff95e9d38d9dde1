"""torch's legacy tensor types and constructors: ``FloatTensor(4, 5)``, ``Tensor([1, 2])``, ``x.type()``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mininn
from mininn import nn

torch = pytest.importorskip("torch")

_TYPES = ["FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor",
          "ByteTensor", "BoolTensor"]


def _dtype_name(t) -> str:
    return str(t.dtype).split(".")[-1]


def _same_error(build) -> None:
    with pytest.raises(Exception) as theirs:
        build(torch)
    with pytest.raises(type(theirs.value)) as ours:
        build(mininn)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("name", _TYPES)
def test_each_type_builds_sizes_data_and_empty_tensors_like_torch(name: str) -> None:
    for args in [(2, 3), (mininn.Size([4]),), ([1.7, 0, -2],), ([[1, 0], [3, 4]],), ((2, 3),), ()]:
        theirs_args = tuple(torch.Size(a) if isinstance(a, mininn.Size) else a for a in args)
        ours, theirs = getattr(mininn, name)(*args), getattr(torch, name)(*theirs_args)
        assert isinstance(ours, mininn.Tensor) and not ours.requires_grad
        assert (_dtype_name(ours), tuple(ours.shape)) == (_dtype_name(theirs), tuple(theirs.shape))
        if args and not isinstance(args[0], (int, mininn.Size)):  # data, not an uninitialised shape
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("name", _TYPES)
def test_isinstance_and_type_names_answer_as_torch(name: str) -> None:
    dtype = getattr(torch, name).dtype
    t = torch.zeros(2, dtype=dtype)
    m = mininn.zeros(2, dtype=getattr(mininn, str(dtype).split(".")[-1]))
    assert m.type() == t.type() == f"torch.{name}"
    for other in _TYPES:
        assert isinstance(m, getattr(mininn, other)) == isinstance(t, getattr(torch, other))
    assert not isinstance(m, getattr(mininn.cuda, name)) and not isinstance(t, getattr(torch.cuda, name))
    cls = getattr(mininn, name)
    assert (cls.dtype, cls.is_cuda, cls.is_sparse, cls.layout) == (m.dtype, False, False, mininn.strided)
    assert str(cls) == str(getattr(torch, name)).replace("torch", "mininn") == f"<class 'mininn.{name}'>"
    assert not issubclass(cls, mininn.Tensor) and not issubclass(getattr(torch, name), torch.Tensor)


def test_parameters_and_sparse_tensors_are_checked_like_torch() -> None:
    assert isinstance(nn.Parameter(mininn.zeros(1)), mininn.FloatTensor)
    assert isinstance(torch.nn.Parameter(torch.zeros(1)), torch.FloatTensor)
    assert not isinstance(mininn.zeros(2, 2).to_sparse(), mininn.FloatTensor)
    assert not isinstance(torch.zeros(2, 2).to_sparse(), torch.FloatTensor)
    assert not isinstance(np.zeros(2, np.float32), mininn.FloatTensor)


def test_tensor_class_is_the_legacy_constructor_with_the_default_dtype() -> None:
    cases = [(2, 3), (3,), ([1, 2],), ([[1, 2], [3, 4]],), ([True, False],), ((2, 3),), ([],), ([[]],), ()]
    for args in cases:
        ours, theirs = mininn.Tensor(*args), torch.Tensor(*args)
        assert (_dtype_name(ours), tuple(ours.shape)) == (_dtype_name(theirs), tuple(theirs.shape)), args
        if args and not isinstance(args[0], int):
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert tuple(mininn.Tensor(mininn.Size([2, 3])).shape) == (2, 3)
    previous = mininn.get_default_dtype()
    mininn.set_default_dtype(mininn.float64)
    try:
        assert mininn.Tensor(2).dtype == mininn.float64 and mininn.Tensor([1]).dtype == mininn.float64
    finally:
        mininn.set_default_dtype(previous)


def test_arrays_keep_their_dtype_in_the_tensor_class() -> None:
    # mininn's own code wraps arrays with Tensor(array); that path is unchanged
    assert mininn.Tensor(np.array([1, 2])).dtype == mininn.int64
    assert mininn.Tensor(np.zeros(2), True).requires_grad


@pytest.mark.parametrize(
    "build",
    [
        lambda lib: lib.FloatTensor(2.5),
        lambda lib: lib.Tensor(2, 3.0),
        lambda lib: lib.FloatTensor(2, "a"),
        lambda lib: lib.LongTensor(lib.tensor([1.0, 2.0])),
        lambda lib: lib.FloatTensor(lib.tensor([1.0], dtype=lib.float64)),
        lambda lib: lib.zeros(2).type("torch.FooTensor"),
        lambda lib: lib.zeros(2).type("float"),
    ],
)
def test_bad_legacy_arguments_raise_torchs_errors(build) -> None:
    _same_error(build)


def test_a_tensor_of_the_types_dtype_is_aliased_not_copied() -> None:
    x = mininn.tensor([1.0, 2.0], requires_grad=True)
    alias = mininn.FloatTensor(x)
    alias.data[0] = 5.0
    assert x[0].item() == 5.0 and not alias.requires_grad
    # Tensor(tensor) keeps the tensor's dtype, whatever it is
    ints = mininn.Tensor(mininn.tensor([1, 2]))
    assert _dtype_name(ints) == _dtype_name(torch.Tensor(torch.tensor([1, 2]))) == "int64"


def test_type_casts_to_legacy_types_names_and_dtypes_like_torch() -> None:
    for target in ["DoubleTensor", "IntTensor", "BoolTensor", "FloatTensor"]:
        for lib in (mininn, torch):
            x = lib.tensor([1.5, 0.0, -2.0])
            by_class, by_name = x.type(getattr(lib, target)), x.type(f"torch.{target}")
            assert by_class.type() == by_name.type() == f"torch.{target}"
            np.testing.assert_array_equal(by_class.numpy(), by_name.numpy())
    x = mininn.zeros(2)
    assert x.type(mininn.FloatTensor) is x and x.type(mininn.int64).dtype == mininn.int64
    theirs = torch.zeros(2).double().type(torch.Tensor)
    assert _dtype_name(x.double().type(mininn.Tensor)) == _dtype_name(theirs)
    assert x.type("mininn.DoubleTensor").dtype == mininn.float64


def test_module_type_takes_a_legacy_type() -> None:
    assert nn.Linear(2, 2).type(mininn.DoubleTensor).weight.dtype == mininn.float64
    assert torch.nn.Linear(2, 2).type(torch.DoubleTensor).weight.dtype == torch.float64


def test_parameter_of_an_uninitialised_float_tensor_initialised_through_data() -> None:
    weight = nn.Parameter(mininn.FloatTensor(4, 5))
    bias = nn.Parameter(mininn.FloatTensor(5))
    weight.data.uniform_(-0.1, 0.1)
    bias.data.normal_(0, 0.01)
    values = weight.detach().numpy()
    assert weight.requires_grad and weight.dtype == mininn.float32 and weight.is_leaf
    assert np.all(np.abs(values) <= 0.1) and np.unique(values).size == 20
    assert abs(bias.detach().numpy()).max() < 0.1
    (weight.sum() + bias.sum()).backward()
    np.testing.assert_array_equal(weight.grad.numpy(), np.ones((4, 5), np.float32))


def test_set_default_tensor_type_warns_and_sets_the_default_dtype_like_torch() -> None:
    for lib in (mininn, torch):
        previous = lib.get_default_dtype()
        try:
            with pytest.warns(UserWarning, match="is deprecated as of PyTorch 2.1, please use"):
                lib.set_default_tensor_type(lib.DoubleTensor)
            assert str(lib.get_default_dtype()).endswith("float64")
            assert str(lib.Tensor(1).dtype).endswith("float64")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lib.set_default_tensor_type("torch.FloatTensor")
            assert str(lib.get_default_dtype()).endswith("float32")
        finally:
            lib.set_default_dtype(previous)
    for bad in [lambda lib: lib.LongTensor, lambda lib: "torch.LongTensor", lambda lib: lib.float64]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _same_error(lambda lib, bad=bad: lib.set_default_tensor_type(bad(lib)))


def test_variable_detaches_sets_requires_grad_and_answers_isinstance_like_torch() -> None:
    from torch.autograd import Variable as TorchVariable

    from mininn.autograd import Variable

    for lib, variable in ((mininn, Variable), (torch, TorchVariable)):
        t = lib.ones(2)
        v = variable(t)
        assert v is not t and not v.requires_grad and isinstance(v, lib.Tensor)
        w = variable(t, requires_grad=True)
        assert w.requires_grad and w.is_leaf and not t.requires_grad
        y = lib.ones(2, requires_grad=True) * 2
        assert variable(y).grad_fn is None
        assert isinstance(lib.ones(1), variable) and tuple(variable().shape) == (0,)
        with pytest.warns(UserWarning, match="volatile was removed and now has no effect"):
            variable(t, volatile=True)
    v = Variable(mininn.zeros(2))
    v.data.fill_(3.0)
    assert v.sum().item() == 6.0
    _same_error(lambda lib: (Variable if lib is mininn else TorchVariable)([1, 2]))


def test_torch_module_paths_of_batch_norm_and_attention_resolve() -> None:
    from mininn.torch_alias import torch_module

    batchnorm = torch_module("torch.nn.modules.batchnorm")
    for layer in (nn.BatchNorm1d(3), nn.BatchNorm2d(3), nn.SyncBatchNorm(3)):
        assert isinstance(layer, batchnorm._BatchNorm) and isinstance(layer, batchnorm._NormBase)
    assert not isinstance(nn.LayerNorm(3), batchnorm._BatchNorm)
    assert torch_module("torch.nn.modules.activation").MultiheadAttention is nn.MultiheadAttention
