"""torch's private helpers and global switches that model files use, vs torch 2.13.

``torch._utils._flatten_dense_tensors``/``_unflatten_dense_tensors``, ``torch._assert``,
``use_deterministic_algorithms``, ``set_float32_matmul_precision``, ``torch.cuda.manual_seed(_all)``,
``torch.nn.modules.utils`` and ``torch.nn.common_types``.
"""

from __future__ import annotations

import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import mininn
from mininn._utils import _flatten_dense_tensors, _unflatten_dense_tensors
from mininn.torch_alias import load_code

torch = pytest.importorskip("torch")
from torch._utils import _flatten_dense_tensors as torch_flatten  # noqa: E402
from torch._utils import _unflatten_dense_tensors as torch_unflatten  # noqa: E402

_RNG = np.random.default_rng(0)
_ARRAYS = [_RNG.standard_normal((2, 3)), _RNG.standard_normal((4,)), _RNG.standard_normal((3, 2)).T]


def _same_error(build) -> None:
    with pytest.raises(Exception) as theirs, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build(torch)
    with pytest.raises(type(theirs.value)) as ours:
        build(mininn)
    assert str(ours.value) == str(theirs.value)


@pytest.fixture
def restore_flags() -> Iterator[None]:
    """Put back every global switch these tests set, in mininn and in torch."""
    yield
    for lib in (mininn, torch):
        lib.use_deterministic_algorithms(False)
        lib.set_float32_matmul_precision("highest")


def test_flatten_and_unflatten_match_torch_with_gradients() -> None:
    def run(lib, flatten, unflatten):
        tensors = [lib.tensor(a, requires_grad=True) for a in _ARRAYS]
        flat = flatten(tensors)
        parts = unflatten(flat, tensors)
        (flat * flat).sum().backward()
        return flat, parts, [t.grad for t in tensors]

    ours = run(mininn, _flatten_dense_tensors, _unflatten_dense_tensors)
    theirs = run(torch, torch_flatten, torch_unflatten)
    np.testing.assert_allclose(ours[0].detach().numpy(), theirs[0].detach().numpy())
    assert isinstance(ours[1], tuple) and len(ours[1]) == len(theirs[1]) == 3
    for a, b in zip(ours[1] + tuple(ours[2]), theirs[1] + tuple(theirs[2])):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy())


def test_unflattened_parts_are_views_of_the_flat_buffer() -> None:
    tensors = [mininn.zeros(2, 2), mininn.zeros(3)]
    flat = _flatten_dense_tensors(tensors)
    first, second = _unflatten_dense_tensors(flat, tensors)
    flat.data.fill_(7.0)
    assert first.sum().item() == 28.0 and second.sum().item() == 21.0
    one = mininn.ones(2, 3)
    assert tuple(_flatten_dense_tensors([one]).shape) == (6,)


def test_flatten_promotes_dtypes_and_bad_inputs_raise_torchs_errors() -> None:
    mixed = _flatten_dense_tensors([mininn.ones(2), mininn.ones(2, dtype=mininn.float64)])
    assert mixed.dtype == mininn.float64
    assert torch_flatten([torch.ones(2), torch.ones(2, dtype=torch.float64)]).dtype == torch.float64
    assert _unflatten_dense_tensors(mininn.zeros(0), []) == torch_unflatten(torch.zeros(0), []) == ()

    def flatten(lib):
        return (_flatten_dense_tensors if lib is mininn else torch_flatten)([])

    def too_short(lib):
        unflatten = _unflatten_dense_tensors if lib is mininn else torch_unflatten
        return unflatten(lib.zeros(3), [lib.ones(2, 3)])

    _same_error(flatten)
    _same_error(too_short)


def test_assert_raises_like_torch() -> None:
    for lib in (mininn, torch):
        lib._assert(True, "fine")
        lib._assert(lib.tensor(True), "fine")
    _same_error(lambda lib: lib._assert(False, "Expected (batch_size, seq_length, hidden_dim)"))
    _same_error(lambda lib: lib._assert(lib.tensor(False), "a tensor condition"))
    _same_error(lambda lib: lib._assert(lib.tensor([True, False]), "two values"))


def test_deterministic_and_matmul_precision_switches_follow_torch(restore_flags) -> None:
    for lib in (mininn, torch):
        assert lib.are_deterministic_algorithms_enabled() is False
        lib.use_deterministic_algorithms(True, warn_only=True)
        assert lib.are_deterministic_algorithms_enabled()
        assert lib.is_deterministic_algorithms_warn_only_enabled()
        assert lib.get_float32_matmul_precision() == "highest"
        lib.set_float32_matmul_precision("high")
        assert lib.get_float32_matmul_precision() == "high"
        with pytest.warns(UserWarning, match="fast is not one of 'highest', 'high', or 'medium'"):
            lib.set_float32_matmul_precision("fast")
        assert lib.get_float32_matmul_precision() == "high"
    _same_error(lambda lib: lib.use_deterministic_algorithms("yes"))
    _same_error(lambda lib: lib.set_float32_matmul_precision(3))


def test_cuda_seeding_leaves_the_cpu_stream_alone_like_torch() -> None:
    for lib in (mininn, torch):
        lib.manual_seed(0)
        first = lib.rand(3).numpy()
        lib.manual_seed(0)
        lib.cuda.manual_seed(5)
        lib.cuda.manual_seed_all(5)
        np.testing.assert_array_equal(lib.rand(3).numpy(), first)


def test_a_model_file_using_them_loads_with_torch_answered_by_mininn(tmp_path: Path, restore_flags) -> None:
    (tmp_path / "model.py").write_text(textwrap.dedent("""
        import torch
        from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors
        from torch.nn.common_types import _size_2_t
        from torch.nn.modules.utils import _pair

        torch.use_deterministic_algorithms(True)
        torch.cuda.manual_seed_all(0)


        def pack(x, size: _size_2_t = 2):
            torch._assert(x.dim() == 2 and _pair(size) == (2, 2), "expected a matrix")
            return _unflatten_dense_tensors(_flatten_dense_tensors([x, 2 * x]), [x, x])
    """))
    module = load_code(tmp_path, "model.py")
    first, second = module.pack(mininn.ones(2, 2))
    np.testing.assert_array_equal(second.numpy(), 2 * first.numpy())
    with pytest.raises(AssertionError, match="expected a matrix"):
        module.pack(mininn.ones(3))
    assert mininn.are_deterministic_algorithms_enabled()


def test_nn_modules_utils_helpers_match_torch() -> None:
    from torch.nn.modules import utils as theirs

    from mininn.nn.modules import utils as ours

    for name in ("_single", "_pair", "_triple", "_quadruple"):
        for value in (3, (1, 2), [4, 5, 6], "ab", None):
            assert getattr(ours, name)(value) == getattr(theirs, name)(value), (name, value)
        assert getattr(ours, name).__name__ == getattr(theirs, name).__name__ == name
    assert ours._ntuple(5)(1) == theirs._ntuple(5)(1)
    assert ours._reverse_repeat_tuple((1, 2, 3), 2) == theirs._reverse_repeat_tuple((1, 2, 3), 2)
    for size in (4, [None, 3], (None, None)):
        assert ours._list_with_default(size, (1, 5, 6, 7)) == theirs._list_with_default(size, (1, 5, 6, 7))
    _same_error(lambda lib: (ours if lib is mininn else theirs)._list_with_default([None, 3], (1,)))


def test_consume_prefix_strips_keys_and_metadata_like_torch() -> None:
    from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present as theirs

    from mininn.nn.modules.utils import consume_prefix_in_state_dict_if_present as ours

    def wrapped(lib):
        state = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU(), lib.nn.Linear(2, 1)).state_dict()
        prefixed = type(state)((f"module.{k}", v) for k, v in state.items())
        renamed = [(f"module.{k}" if k else "module", v) for k, v in state._metadata.items()]
        prefixed._metadata = type(state._metadata)([("", {"version": 1}), *renamed])
        prefixed["other.key"] = state["0.weight"]
        return prefixed

    mine, torchs = wrapped(mininn), wrapped(torch)
    ours(mine, "module.")
    theirs(torchs, "module.")
    assert list(mine) == list(torchs)
    assert list(mine._metadata) == list(torchs._metadata)


def test_common_types_name_the_same_aliases_as_torch() -> None:
    import torch.nn.common_types as theirs

    import mininn.nn.common_types as ours

    names = {n for n in dir(theirs) if n.startswith("_") and n.endswith("_t") and not n.startswith("__")}
    assert names <= set(dir(ours))
    assert ours._size_2_t == ours.Union[int, tuple[int, int]]
