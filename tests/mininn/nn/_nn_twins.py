"""Twin module classes for differential tests of ``mininn.nn.Module`` against torch.

``make("torch")`` and ``make("mininn")`` return namespaces with the same tiny
leaf modules written against each library (``Lin``: x @ w.T + b, ``Norm``: a
BatchNorm-like module with int64 ``num_batches_tracked`` and ``_version = 2``,
``Net``: the reference's out-of-order example), built from the same NumPy
values, so a test can run one scenario on both and compare the results.

``outcome(fn, ns)`` runs a scenario and returns its value or
``(exception type name, e.args[0])``; ``norm`` applies the one message rule
(``torch`` -> ``mininn`` outside URLs) to torch's side.

On torch's side only an exception that torch raises counts as an outcome: one
raised in torch's own Python files (the innermost frame of its traceback), one
from its C++ code (which has no frame of its own: a plain ``RuntimeError``, which
Python never raises for a typo, or an exception class of torch's), or a
``TypeError`` for the arguments of a torch function that the message names.
Anything else is the scenario's own crash (a typo, a wrong helper call), and
fails the test instead of passing because mininn crashed the same way.
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from types import SimpleNamespace
from typing import Any

import numpy as np

_URL = re.compile(r"https?://\S+")


def norm(value: Any) -> Any:
    """torch's text with ``torch`` -> ``mininn`` (URLs kept); recurses into containers."""
    if isinstance(value, str):
        parts = _URL.split(value)
        urls = _URL.findall(value)
        out = parts[0].replace("torch", "mininn")
        for url, part in zip(urls, parts[1:]):
            out += url + part.replace("torch", "mininn")
        return out
    if isinstance(value, tuple):
        return tuple(norm(v) for v in value)
    if isinstance(value, list):
        return [norm(v) for v in value]
    if isinstance(value, dict):
        return {norm(k): norm(v) for k, v in value.items()}
    return value


_SIGNATURE = re.compile(r"(?P<name>[\w.]+)\(\) (?:missing|got|takes) ")


def _raised_in(error: BaseException) -> str:
    """The file of the innermost frame of ``error``'s traceback."""
    tb = error.__traceback__
    assert tb is not None
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_filename


def _torch_file(path: str | None) -> bool:
    import torch

    return path is not None and path.startswith(os.path.dirname(torch.__file__) + os.sep)


def _torch_signature(error: BaseException, ns: SimpleNamespace) -> bool:
    """A TypeError binding the arguments of a torch function (``ParameterDict.__call__() missing ...``)."""
    match = _SIGNATURE.match(str(error)) if isinstance(error, TypeError) else None
    if match is None:
        return False
    target: Any = ns.nn
    for part in match["name"].split("."):
        target = getattr(target, part, None)
    code = getattr(target, "__code__", None)
    return _torch_file(getattr(code, "co_filename", None))


def raised_by_torch(error: BaseException, ns: SimpleNamespace) -> bool:
    """Whether torch raised ``error`` (not the scenario's own code): see the module docstring."""
    from_cpp = type(error) is RuntimeError or type(error).__module__.split(".")[0] == "torch"
    return _torch_file(_raised_in(error)) or from_cpp or _torch_signature(error, ns)


def outcome(fn: Any, ns: SimpleNamespace) -> Any:
    """``fn(ns)``'s value, or ``(type name, first arg)`` of what it raised.

    Raises:
        AssertionError: on torch's side, the scenario crashed in its own code.
    """
    try:
        return ("ok", fn(ns))
    except Exception as e:  # noqa: BLE001 - the exception is the result under test
        if ns.name == "torch" and not raised_by_torch(e, ns):
            raise AssertionError(f"the scenario crashed in its own code, not in torch: {e!r}") from e
        return (type(e).__name__, e.args[0] if e.args else None)


def same(fn: Any) -> Any:
    """Run ``fn`` on both libraries; assert equal outcomes (torch's normalized); return mininn's."""
    t = outcome(fn, TORCH)
    m = outcome(fn, MININN)
    assert norm(t) == m, f"torch: {t!r}\nmininn: {m!r}"
    return m


def arr(*shape: int, start: float = 0.0, dtype: Any = np.float32) -> np.ndarray:
    """Deterministic values: start, start+0.1, ... in ``shape``."""
    n = int(np.prod(shape)) if shape else 1
    return (start + 0.1 * np.arange(n)).astype(dtype).reshape(shape)


def to_np(t: Any) -> np.ndarray:
    if t is None:
        return None  # type: ignore[return-value]
    if hasattr(t, "detach"):
        t = t.detach()
    return np.asarray(t.numpy() if hasattr(t, "numpy") else t)


def make(lib_name: str) -> SimpleNamespace:
    """The twin classes for ``"torch"`` or ``"mininn"``."""
    if lib_name == "torch":
        import torch as lib

        def T(a: Any) -> Any:
            return lib.from_numpy(np.array(a))
    else:
        import mininn as lib
        import mininn.nn  # noqa: F401 - mininn/__init__ may not import nn

        def T(a: Any) -> Any:
            return lib.tensor(np.array(a))

    nn = lib.nn

    class Lin(nn.Module):
        def __init__(self, i: int, o: int, bias: bool = True, start: float = 0.0) -> None:
            super().__init__()
            self.in_features, self.out_features = i, o
            self.weight = nn.Parameter(T(arr(o, i, start=start)))
            if bias:
                self.bias = nn.Parameter(T(arr(o, start=-start)))
            else:
                self.register_parameter("bias", None)

        def forward(self, x: Any) -> Any:
            y = x @ self.weight.T
            return y if self.bias is None else y + self.bias

        def extra_repr(self) -> str:
            return (
                f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}"
            )

    class Norm(nn.Module):
        _version = 2

        def __init__(self, n: int) -> None:
            super().__init__()
            self.n = n
            self.weight = nn.Parameter(T(np.ones(n, np.float32)))
            self.bias = nn.Parameter(T(np.zeros(n, np.float32)))
            self.register_buffer("running_mean", T(np.zeros(n, np.float32)))
            self.register_buffer("running_var", T(np.ones(n, np.float32)))
            self.register_buffer("num_batches_tracked", T(np.array(0, np.int64)))

        def forward(self, x: Any) -> Any:
            return (x - self.running_mean) * self.weight + self.bias

        def extra_repr(self) -> str:
            return f"{self.n}, eps=1e-05"

    class Act(nn.Module):
        def forward(self, x: Any) -> Any:
            return x * 2.0

    class Net(nn.Module):
        """The reference's example: a buffer before a param, children out of order."""

        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("zbuf", T(np.zeros(2, np.float32)))
            self.scale = nn.Parameter(T(np.ones(1, np.float32)))
            self.register_buffer("tmp", T(np.ones(1, np.float32)), persistent=False)
            self.fc2 = Lin(3, 2, start=0.5)
            self.bn = Norm(3)
            self.fc1 = Lin(4, 3)

        def forward(self, x: Any) -> Any:
            return self.fc2(self.bn(self.fc1(x))) * self.scale

    class Tied(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = Lin(3, 3)
            self.head = Lin(3, 3, bias=False)
            self.head.weight = self.emb.weight
            self.again = self.emb

        def forward(self, x: Any) -> Any:
            return self.head(self.emb(x))

    class Two(nn.Module):
        """Two tensor inputs around a non-tensor one; two outputs."""

        def forward(self, a: Any, k: Any, b: Any) -> Any:
            return a * k + b, a * b

    return SimpleNamespace(
        name=lib_name,
        lib=lib,
        nn=nn,
        T=T,
        Lin=Lin,
        Norm=Norm,
        Act=Act,
        Net=Net,
        Tied=Tied,
        Two=Two,
        OrderedDict=OrderedDict,
    )


TORCH = make("torch")
MININN = make("mininn")
