"""``autocast`` (``torch.amp``, ``torch.cuda.amp``) in model files, vs torch 2.13 without CUDA."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mininn
from mininn.torch_alias import torch_module

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(torch.cuda.is_available() or mininn.cuda.is_available(),
                                reason="compares the behaviour without CUDA")


def _libs():
    return (torch_module("torch"), torch)


def test_cuda_autocast_without_cuda_warns_and_changes_nothing_like_torch() -> None:
    for lib in _libs():
        with pytest.warns(UserWarning, match="CUDA is not available or torch_xla is imported. Disabling"):
            region = lib.autocast("cuda", dtype=lib.float16)
        with region:
            assert not lib.is_autocast_enabled()
            out = lib.ones(2, 2) @ lib.ones(2, 2)
        assert str(out.dtype).endswith("float32")
        with pytest.warns(FutureWarning, match="torch.cuda.amp.autocast\\(args...\\)` is deprecated"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                old = lib.cuda.amp.autocast()
        with old:
            assert not lib.is_autocast_enabled()


def test_disabled_autocast_as_context_and_decorator_is_a_no_op_like_torch() -> None:
    for lib in _libs():
        with lib.autocast("cpu", enabled=False):
            assert not lib.is_autocast_enabled("cpu")

        @lib.autocast("cuda", enabled=False)
        def double(x):
            return x * 2

        np.testing.assert_array_equal(double(lib.ones(3)).numpy(), np.full(3, 2.0, np.float32))
        assert double.__name__ == "double"


def test_an_autocast_torch_would_apply_is_refused_with_what_to_do() -> None:
    with torch.autocast("cpu"):
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.bfloat16  # torch really casts
    with pytest.raises(NotImplementedError, match="not supported in mininn.*enabled=False"):
        with mininn.autocast("cpu"):
            pass


def test_bad_device_types_raise_torchs_errors() -> None:
    for bad in ("tpu", 3):
        with pytest.raises(Exception) as theirs:
            torch.autocast(bad)
        with pytest.raises(type(theirs.value)) as ours:
            mininn.autocast(bad)
        assert str(ours.value) == str(theirs.value)
