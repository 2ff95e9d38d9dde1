"""dtypes and devices against torch 2.13: names, properties, parsing, messages,
ops in every supported dtype, and the error for tensors on different devices.
"""

from types import SimpleNamespace

import numpy as np
import pytest
from _tensor_parity import torch_error

import mininn

torch = pytest.importorskip("torch")

NAMES = ["float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]


@pytest.mark.parametrize("name", NAMES)
def test_dtype_properties_match_torch(name):
    ours, theirs = getattr(mininn, name), getattr(torch, name)
    assert repr(ours) == repr(theirs).replace("torch.", "mininn.")
    assert ours.is_floating_point == theirs.is_floating_point
    assert ours.is_signed == theirs.is_signed
    assert ours.itemsize == theirs.itemsize
    assert mininn.zeros(2, dtype=ours).dtype is ours
    assert mininn.as_tensor(np.zeros(2, dtype=ours.np)).dtype is ours


def test_dtype_aliases_and_lookup_by_name():
    assert mininn.float is mininn.float32 and mininn.double is mininn.float64
    assert mininn.half is mininn.float16 and mininn.long is mininn.int64 and mininn.int is mininn.int32
    assert mininn._dtype.as_dtype("torch.float64") is mininn.float64
    assert mininn._dtype.as_dtype(np.int32) is mininn.int32
    with pytest.raises(TypeError, match="unknown dtype 'float128'; supported: "):
        mininn._dtype.as_dtype("float128")
    with pytest.raises(TypeError, match="unsupported dtype uint16; supported: "):
        mininn.as_tensor(np.zeros(1, dtype=np.uint16))


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
def test_low_and_high_precision_floats_compute_and_backprop(name):
    dt = getattr(mininn, name)
    x = mininn.tensor([0.5, -1.0, 2.0], dtype=dt, requires_grad=True)
    y = (x * x + x.exp()).sum()
    y.backward()
    assert y.dtype is dt and x.grad.dtype is dt
    tx = torch.tensor([0.5, -1.0, 2.0], dtype=getattr(torch, name), requires_grad=True)
    (tx * tx + tx.exp()).sum().backward()
    np.testing.assert_allclose(x.grad.float().numpy(), tx.grad.float().numpy(), rtol=1e-2)


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64", "uint8"])
def test_integer_dtypes_keep_their_dtype_in_arithmetic(name):
    ours = mininn.tensor([1, 2, 3], dtype=getattr(mininn, name))
    theirs = torch.tensor([1, 2, 3], dtype=getattr(torch, name))
    for fn in (lambda t: t + 1, lambda t: t * t, lambda t: t // 2, lambda t: -t if name != "uint8" else t):
        got, want = fn(ours), fn(theirs)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        assert got.tolist() == want.tolist()


DEVICES = ["cpu", "cuda", "cuda:0", "cuda:3"]


@pytest.mark.parametrize("spec", DEVICES)
def test_device_parsing_and_printing_match_torch(spec):
    ours, theirs = mininn.device(spec), torch.device(spec)
    assert repr(ours) == repr(theirs) and str(ours) == str(theirs)
    assert ours.type == theirs.type and ours.index == theirs.index
    assert ours == spec and ours == mininn.device(ours) and hash(ours) == hash(mininn.device(spec))


def test_device_with_index_argument_and_bad_strings_match_torch():
    assert mininn.device("cuda", 1) == mininn.device("cuda:1")
    for bad in ("tpu", "cuda:x", "cuda:-1"):
        want = torch_error(lambda lib, bad=bad: lib.device(bad))
        with pytest.raises(type(want)) as info:
            mininn.device(bad)
        assert str(info.value) == str(want)


class _FakeCudaArray:
    """Just enough of a CuPy array for the device checks (no math)."""

    __cuda_array_interface__: dict = {}
    device = SimpleNamespace(id=0)
    dtype = np.dtype(np.float32)
    shape = (2,)
    ndim = 1
    size = 2


def test_mixing_devices_in_one_op_raises_torch_message():
    gpu = mininn.Tensor(_FakeCudaArray())
    assert gpu.device == mininn.device("cuda:0") and gpu.is_cuda
    want = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
    for op in (lambda a, b: a + b, lambda a, b: a * b, lambda a, b: mininn.cat([a, b]),
               lambda a, b: a @ b, lambda a, b: a < b):
        with pytest.raises(RuntimeError) as info:
            op(mininn.ones(2), gpu)
        assert str(info.value) == want
