"""``mininn.jit`` against ``torch.jit``: the decorators run code eagerly with torch's results and errors."""

from __future__ import annotations

import io
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union  # noqa: UP035 - the types TorchScript code uses

import numpy as np
import pytest

import mininn
import mininn.jit as mjit
from mininn import nn
from mininn.torch_alias import load_code

torch = pytest.importorskip("torch")
# torch 2.13 warns that TorchScript is deprecated
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.:DeprecationWarning")


def outcome(run: Any) -> tuple[str, Any]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", run()
    except Exception as exc:  # noqa: BLE001 - the outcome is what is compared
        return type(exc).__name__, str(exc)


def copy_weights(theirs: Any, ours: nn.Module) -> None:
    ours.load_state_dict({k: mininn.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})


# -- script and friends return what they get ---------------------------------------------------------------


def test_script_returns_the_function_and_it_computes_what_torch_scripted_computes() -> None:
    def gelu_tanh(x):  # a helper people script
        return 0.5 * x * (1 + (0.7978845608 * (x + 0.044715 * x**3)).tanh())

    x = np.linspace(-3, 3, 13, dtype=np.float32)
    assert mjit.script(gelu_tanh) is gelu_tanh
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        expected = torch.jit.script(gelu_tanh)(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(gelu_tanh(mininn.from_numpy(x)).numpy(), expected, rtol=1e-5, atol=1e-6)


def test_script_of_a_module_is_the_module_with_torchs_state_dict_and_outputs() -> None:
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    ours = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    copy_weights(theirs, ours)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        scripted = torch.jit.script(theirs)
    assert mjit.script(ours) is ours
    assert list(ours.state_dict()) == list(scripted.state_dict())
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(ours(mininn.from_numpy(x)).detach().numpy(),
                               scripted(torch.from_numpy(x)).detach().numpy(), rtol=1e-6)


def test_marking_decorators_return_the_code_unchanged() -> None:
    def f(x):
        return x + 1

    prop = property(lambda self: 3)
    assert mjit.ignore(f) is f and mjit.ignore()(f) is f and mjit.ignore(drop=False)(f) is f
    assert mjit.unused(f) is f and mjit.unused(prop) is prop
    assert mjit.export(f) is f and mjit.script_method(f) is f and mjit.script_if_tracing(f) is f
    assert mjit._overload(f) is f and mjit._overload_method(f) is f
    assert mjit.interface(nn.Module) is nn.Module
    assert mjit.annotate(List[int], [1]) == [1]  # noqa: UP006
    assert mjit.is_scripting() is torch.jit.is_scripting() is False
    assert mjit.is_tracing() is torch.jit.is_tracing() is False
    assert mjit.Final is torch.jit.Final


def test_ignore_drop_true_warns_as_torch_and_a_bad_argument_is_torchs_error() -> None:
    with pytest.warns(FutureWarning, match="Use torch.jit.unused now"):
        decorator = mjit.ignore(drop=True)
    assert decorator(len) is len
    assert outcome(lambda: mjit.ignore(2)) == outcome(lambda: torch.jit.ignore(2))
    assert outcome(lambda: mjit.interface(len)) == outcome(lambda: torch.jit.interface(len))


class Gated(nn.Module):
    """The shape of a module that model files mark for TorchScript."""

    scale: mjit.Final[float]

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.scale = 2.0
        self.calls = 0

    @mjit.ignore
    def count(self) -> None:
        self.calls += 1

    @mjit.unused
    def train_only(self, x: Any) -> Any:
        return x

    def forward(self, x: Any) -> Any:
        if not mjit.is_scripting():
            self.count()
        return self.fc(x) * self.scale


def test_a_module_with_ignored_and_final_members_runs_eagerly() -> None:
    module = mjit.script(Gated())
    module(mininn.ones(1, 4))
    module(mininn.ones(1, 4))
    assert module.calls == 2
    assert list(module.state_dict()) == ["fc.weight", "fc.bias"]


# -- trace ------------------------------------------------------------------------------------------------


def test_trace_runs_the_example_once_and_returns_the_code_unchanged() -> None:
    seen = []

    def double(x):
        seen.append(tuple(x.shape))
        return x * 2

    assert mjit.trace(double, mininn.ones(2, 3)) is double
    assert mjit.trace(double, (mininn.ones(4),)) is double
    assert mjit.trace(double, example_kwarg_inputs={"x": mininn.ones(1)}) is double
    assert seen == [(2, 3), (4,), (1,)]
    linear = nn.Linear(2, 2)
    assert mjit.trace(linear, mininn.ones(1, 2)) is linear
    assert mjit.trace_module(linear, {"forward": (mininn.ones(1, 2),)}) is linear


TRACE_ERRORS = {
    "kwargs not a dict": lambda lib, t: lib.trace(t.nn.Linear(2, 2), example_kwarg_inputs=[t.ones(1, 2)]),
    "example raises": lambda lib, t: lib.trace(t.nn.Linear(2, 2), t.ones(1, 3)),
}


@pytest.mark.parametrize("name", list(TRACE_ERRORS))
def test_trace_errors_equal_torch(name: str) -> None:
    case = TRACE_ERRORS[name]
    assert outcome(lambda: case(mjit, mininn)) == outcome(lambda: case(torch.jit, torch))


def test_trace_without_example_inputs_says_what_to_give() -> None:
    with pytest.raises(TypeError, match="needs example_inputs"):
        mjit.trace(len)


# -- fork/wait, Attribute, ScriptModule, freeze -------------------------------------------------------------


def test_fork_runs_now_and_wait_returns_the_result_as_torch() -> None:
    future = mjit.fork(lambda x, y=1: x + y, 2, y=3)
    assert future.done() and mjit.wait(future) == future.wait() == future.value() == 5
    assert torch.jit.wait(torch.jit.fork(lambda x, y=1: x + y, 2, y=3)) == 5

    def boom(x):
        raise ValueError("boom")

    assert outcome(lambda: mjit.fork(boom, 1)) == outcome(lambda: torch.jit.fork(boom, 1))
    with pytest.raises(TypeError, match="Future from torch.jit.fork"):
        mjit.wait(3)
    assert mjit.Future[int] is not None  # annotations such as List[torch.jit.Future[Tensor]]


def test_attribute_is_torchs_named_tuple_and_a_script_module_unwraps_it() -> None:
    ours, theirs = mjit.Attribute(3, int), torch.jit.Attribute(3, int)
    assert ours._fields == theirs._fields and tuple(ours) == tuple(theirs)

    class Old(mjit.ScriptModule):
        __constants__ = ["k"]

        def __init__(self) -> None:
            super().__init__()
            self.k = 3
            self.names = mjit.Attribute([1, 2], List[int])  # noqa: UP006
            self.fc = nn.Linear(2, 2)

        @mjit.script_method
        def forward(self, x):
            return self.fc(x) * self.k

    old = Old()
    assert old.names == [1, 2] and isinstance(old, nn.Module)
    assert old(mininn.ones(1, 2)).shape == (1, 2)
    assert list(old.state_dict()) == ["fc.weight", "fc.bias"]


def test_freeze_wants_eval_mode_as_torch_and_returns_the_module() -> None:
    module = nn.Linear(2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        scripted = torch.jit.script(torch.nn.Linear(2, 2))
    assert outcome(lambda: mjit.freeze(module)) == outcome(lambda: torch.jit.freeze(scripted))
    assert mjit.freeze(module.eval()) is module
    module.train()
    assert mjit.optimize_for_inference(module) is module and not module.training
    with mjit.optimized_execution(False), mjit.fuser("fuser1"):
        pass


# -- isinstance --------------------------------------------------------------------------------------------

ISINSTANCE = [
    ([1, 2], List[int]),  # noqa: UP006
    ([1, "a"], List[int]),  # noqa: UP006
    ([], List[int]),  # noqa: UP006
    ([1], list[int]),
    ({"a": [1]}, Dict[str, List[int]]),  # noqa: UP006
    ({"a": ["b"]}, Dict[str, List[int]]),  # noqa: UP006
    (None, Optional[int]),  # noqa: UP045
    (3, Optional[int]),  # noqa: UP045
    ("s", Optional[int]),  # noqa: UP045
    (3, int | None),
    ((1, "a"), Tuple[int, str]),  # noqa: UP006
    ((1, "a"), Tuple[int]),  # noqa: UP006
    ((1, "a"), tuple[int, str]),
    (1, Union[int, str]),  # noqa: UP007
    (1.0, int),
    (True, int),
    ([1], list),
    ({}, dict),
    ((), tuple),
    ({}, Dict),  # noqa: UP006
    ([], List),  # noqa: UP006
    (None, Optional),
    (1, Any),
]


@pytest.mark.parametrize(("obj", "target"), ISINSTANCE, ids=[f"{o!r}-{t!r}" for o, t in ISINSTANCE])
def test_isinstance_equals_torch(obj: Any, target: Any) -> None:
    assert outcome(lambda: mjit.isinstance(obj, target)) == outcome(lambda: torch.jit.isinstance(obj, target))


def test_isinstance_checks_mininn_tensors() -> None:
    assert mjit.isinstance({"a": mininn.ones(1)}, Dict[str, mininn.Tensor])  # noqa: UP006
    assert not mjit.isinstance([mininn.ones(1), 1], List[mininn.Tensor])  # noqa: UP006


# -- TorchScript archives are refused ----------------------------------------------------------------------


@pytest.fixture
def archives(tmp_path: Path) -> dict[str, Path]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        scripted = torch.jit.script(torch.nn.Linear(2, 2))
    paths = {"scripted": tmp_path / "scripted.pt", "state_dict": tmp_path / "weights.pt"}
    torch.jit.save(scripted, str(paths["scripted"]))
    torch.save(torch.nn.Linear(2, 2).state_dict(), paths["state_dict"])
    return paths


def test_jit_load_of_a_torchscript_archive_says_to_save_a_state_dict(archives: dict[str, Path]) -> None:
    scripted = archives["scripted"]
    for source in (scripted, str(scripted), io.BytesIO(scripted.read_bytes())):
        with pytest.raises(mjit.TorchScriptError) as info:
            mjit.load(source)
        message = str(info.value)
        assert "cannot run TorchScript archives" in message
        assert "torch.save(model.state_dict(), 'weights.pt')" in message and "model.py" in message


def test_jit_load_of_a_state_dict_says_to_use_torch_load(archives: dict[str, Path]) -> None:
    with pytest.raises(mjit.TorchScriptError, match="saved by torch.save, not a TorchScript archive; load it "
                                                    "with torch.load"):
        mjit.load(archives["state_dict"])


def test_jit_load_of_a_missing_path_is_torchs_error(tmp_path: Path) -> None:
    for path in (str(tmp_path / "nothing.pt"), str(tmp_path)):
        assert outcome(lambda p=path: mjit.load(p)) == outcome(lambda p=path: torch.jit.load(p))


def test_jit_save_refuses_and_says_what_to_save() -> None:
    with pytest.raises(mjit.TorchScriptError, match=r"torch.save\(model.state_dict\(\)"):
        mjit.save(nn.Linear(2, 2), io.BytesIO())


# -- served code: `torch.jit` answers with mininn.jit -------------------------------------------------------

MODEL_FILE = '''
from typing import List

import torch
import torch.jit
from torch import nn
from torch.jit import Final


@torch.jit.script
def swish(x):
    return x * torch.sigmoid(x)


class Net(nn.Module):
    width: Final[int]

    def __init__(self):
        super().__init__()
        self.width = 3
        self.fc = nn.Linear(3, 3)

    @torch.jit.ignore
    def describe(self):
        return "net"

    def forward(self, x):
        outs = torch.jit.annotate(List[torch.Tensor], [])
        outs.append(swish(self.fc(x)))
        return torch.jit.wait(torch.jit.fork(torch.cat, outs, 0))
'''


def test_model_code_uses_torch_jit_as_mininn_jit(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(MODEL_FILE)
    module = load_code(tmp_path, "model.py")
    net = module.Net()
    assert net(mininn.ones(2, 3)).shape == (2, 3) and net.describe() == "net"


def test_warning_and_error_classes_have_torchs_bases() -> None:
    for name in ("TracerWarning", "ScriptWarning", "TracingCheckError", "Error"):
        ours, theirs = getattr(mjit, name), getattr(torch.jit, name)
        assert [b.__name__ for b in ours.__mro__[1:]] == [b.__name__ for b in theirs.__mro__[1:]], name
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=mjit.TracerWarning)  # as export scripts write it


def test_fusion_settings_are_recorded_and_returned_as_torchs() -> None:
    saved = torch.jit.set_fusion_strategy([("STATIC", 2), ("DYNAMIC", 10)])
    ours_saved = mjit.set_fusion_strategy([("STATIC", 2), ("DYNAMIC", 10)])
    try:
        for strategy in ([("STATIC", 3)], [("DYNAMIC", 1)], [("BOGUS", 1)]):
            assert outcome(lambda s=strategy: mjit.set_fusion_strategy(s)) == outcome(
                lambda s=strategy: torch.jit.set_fusion_strategy(s))
    finally:
        torch.jit.set_fusion_strategy(saved)
        mjit.set_fusion_strategy(ours_saved)
    assert mjit.onednn_fusion_enabled() is torch.jit.onednn_fusion_enabled() is False
    mjit.enable_onednn_fusion(True)
    try:
        assert mjit.onednn_fusion_enabled() is True
    finally:
        mjit.enable_onednn_fusion(False)
