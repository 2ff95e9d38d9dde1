"""Every public callable that mininn shares with torch accepts torch's parameter names and kinds.

One test walks the four namespaces model files call (``torch.*``, ``Tensor`` methods,
``torch.nn.functional``, ``torch.nn.init``) and compares, name by name, mininn's signature
with torch's:

- torch's signature comes from ``inspect.signature`` for Python-level functions
  (``torch.functional.split``, ``nn.functional``, ``nn.init``; both branches of a
  ``boolean_dispatch`` such as ``F.max_pool2d``), and otherwise from the type stubs that
  torch ships and generates from its own schemas (``torch/_C/_VariableFunctions.pyi``,
  ``TensorBase`` in ``torch/_C/__init__.pyi``, ``torch/_C/_nn.pyi``), one signature per
  ``@overload``;
- a call that any overload allows must bind to mininn's signature: every positional
  slot, every keyword name, and a call with only the overload's required arguments;
- where both give a default, the defaults are equal; a parameter torch only takes by
  keyword is keyword-only in mininn too (else positional calls would bind differently).

The stubs are read with three rules, each checked against real torch below: torch's
deprecated scalar-first forms (``torch.add(input, alpha, other)``) and its ``self=``
keyword on scalar-first overloads (``torch.pow(self=2, exponent=x)``) are not API that
model files use, so overloads naming ``self`` are dropped where another overload names
``input``; a function whose only overload names ``self`` takes it as ``input``
(``torch.numel(input=x)``); ``STUB_FIXES`` lists the few stub entries that disagree with
what torch's argument parser accepts. Torch-private parameters (``_stacklevel``,
``_use_new_zipfile_serialization``) are compared only where mininn has a parameter there.

What mininn does not match on purpose is in ``EXCEPTIONS``, one reason each.
"""

from __future__ import annotations

import ast
import functools
import inspect
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mininn
import mininn.nn.functional as MF
import mininn.nn.init as MI

torch = pytest.importorskip("torch")
TF = torch.nn.functional
TI = torch.nn.init

P = inspect.Parameter
POSITIONAL = (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)
NAMED = (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY)
TORCH_DIR = Path(torch.__file__).parent

SPACES: dict[str, tuple[Any, Any]] = {
    "torch": (mininn, torch),
    "Tensor": (mininn.Tensor, torch.Tensor),
    "F": (MF, TF),
    "init": (MI, TI),
}
STUBS: dict[str, list[tuple[str, str | None]]] = {
    "torch": [("_C/_VariableFunctions.pyi", None), ("_C/__init__.pyi", None)],
    "Tensor": [("_C/__init__.pyi", "TensorBase")],
    "F": [("nn/functional.pyi", None), ("_C/_nn.pyi", None), ("_C/_VariableFunctions.pyi", None)],
    "init": [],
}

# (namespace, function, parameter) -> why mininn does not take it as torch does; "*" matches any
EXCEPTIONS: dict[tuple[str, str, str], str] = {
    ("*", "*", "out"): "out= is not implemented: mininn's ops always return a new tensor",
    ("*", "*", "names"): "named tensors (a torch prototype) are not implemented",
    ("torch", "*", "out_dtype"): "torch's CPU backend has no kernel for out_dtype (aten::mm.dtype) either",
    ("torch", "load", "pickle_module"): "checkpoints only go through mininn's restricted unpickler",
    ("torch", "load", "mmap"): "checkpoints are read into memory, never memory-mapped",
    ("torch", "save", "pickle_module"): "mininn writes tensors and plain containers, never pickles",
    ("torch", "save", "pickle_protocol"): "mininn writes tensors and plain containers, never pickles",
}

REQUIRED = "<required>"
# stub entries that torch's argument parser contradicts (each checked in test_stub_fixes_are_torchs):
# a new name, None (positional only) or REQUIRED (the stub gives a default the parser does not)
STUB_FIXES: dict[tuple[str, str], dict[str, str | None]] = {
    ("torch", "linspace"): {"steps": REQUIRED},  # linspace(0, 1): "received an invalid combination"
    ("torch", "logspace"): {"steps": REQUIRED},
    ("Tensor", "requires_grad_"): {"mode": "requires_grad"},  # x.requires_grad_(requires_grad=True)
    ("Tensor", "uniform_"): {"from_": None},  # the parser's name is `from`, no keyword can spell it
    ("Tensor", "random_"): {"from_": None},
    ("torch", "from_numpy"): {"ndarray": None},  # "from_numpy() takes no keyword arguments"
}

# shared names whose torch signature neither inspect nor the stubs know (take no arguments)
NO_TORCH_SIGNATURE = {"Tensor.cdouble", "Tensor.cfloat"}


class Unknown:
    """A stub's ``= ...`` default: torch does not say which value."""

    def __repr__(self) -> str:
        return "..."


UNKNOWN = Unknown()


class Expr(str):
    """A stub default that is an expression (``torch.contiguous_format``), kept as its text."""


# ---- torch's signatures ---------------------------------------------------------------------
@functools.cache
def _stub_defs(rel: str, cls: str | None) -> dict[str, list[ast.FunctionDef]]:
    body = ast.parse((TORCH_DIR / rel).read_text()).body
    if cls is not None:
        body = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == cls).body
    defs: dict[str, list[ast.FunctionDef]] = defaultdict(list)
    for node in body:
        if isinstance(node, ast.FunctionDef):
            if not any(ast.unparse(d) == "property" for d in node.decorator_list):
                defs[node.name].append(node)
    return defs


def _stub_value(node: ast.expr | None) -> Any:
    if node is None:
        return P.empty
    if isinstance(node, ast.Constant) and node.value is Ellipsis:
        return UNKNOWN
    try:
        return ast.literal_eval(node)
    except ValueError:
        return Expr(ast.unparse(node))


def _from_stub(fn: ast.FunctionDef, method: bool) -> inspect.Signature:
    a = fn.args
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    params = [
        P(x.arg, P.POSITIONAL_ONLY if i < len(a.posonlyargs) else P.POSITIONAL_OR_KEYWORD,
          default=_stub_value(d))
        for i, (x, d) in enumerate(zip(pos, defaults, strict=True))
    ]
    if a.vararg:
        params.append(P(a.vararg.arg, P.VAR_POSITIONAL))
    params += [P(x.arg, P.KEYWORD_ONLY, default=_stub_value(d))
               for x, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
    if a.kwarg:
        params.append(P(a.kwarg.arg, P.VAR_KEYWORD))
    return inspect.Signature(params[1:] if method else params)


def _clean_stub_overloads(sigs: list[inspect.Signature]) -> list[inspect.Signature]:
    """Drop ``self``-naming overloads beside ``input`` ones; a lone ``self`` is ``input``."""
    plain = [s for s in sigs if "self" not in s.parameters]
    if plain:
        return plain
    return [s.replace(parameters=[p.replace(name="input") if p.name == "self" else p
                                  for p in s.parameters.values()]) for s in sigs]


def _python_signature(obj: Any, method: bool) -> inspect.Signature | None:
    try:
        sig = inspect.signature(obj)
    except (ValueError, TypeError):
        return None
    params = list(sig.parameters.values())[1 if method else 0:]
    if [p.kind for p in params] == [P.VAR_POSITIONAL, P.VAR_KEYWORD]:
        return None  # a generic wrapper says nothing
    return sig.replace(parameters=params)


def _boolean_dispatch(obj: Any) -> dict[str, Any] | None:
    try:
        return torch._jit_internal.boolean_dispatched.get(obj)
    except TypeError:  # C methods cannot be weakly referenced
        return None


def _dispatch_signatures(obj: Any, method: bool) -> list[inspect.Signature]:
    """The signatures of a ``boolean_dispatch``'s branches (themselves dispatches, for ``unique``)."""
    dispatch = _boolean_dispatch(obj)
    if not dispatch:
        sig = _python_signature(obj, method)
        return [] if sig is None else [sig]
    return [s for k in ("if_true", "if_false") for s in _dispatch_signatures(dispatch[k], method)]


def _apply_fixes(space: str, name: str, sigs: list[inspect.Signature]) -> list[inspect.Signature]:
    fixes = STUB_FIXES.get((space, name))
    if not fixes:
        return sigs
    out = []
    for s in sigs:
        params = []
        for p in s.parameters.values():
            if p.name in fixes and fixes[p.name] is None:
                p = p.replace(kind=P.POSITIONAL_ONLY) if p.kind in POSITIONAL else p
            elif p.name in fixes and fixes[p.name] == REQUIRED:
                p = p.replace(default=P.empty)
            elif p.name in fixes:
                p = p.replace(name=fixes[p.name])
            params.append(p)
        out.append(s.replace(parameters=params))
    return out


def torch_signatures(space: str, name: str) -> list[inspect.Signature] | None:
    """torch's signatures of ``name`` in ``space`` (one per overload), or None if unknown."""
    ns = SPACES[space][1]
    obj = getattr(ns, name)
    method = space == "Tensor"
    if _boolean_dispatch(obj):
        return _dispatch_signatures(obj, method)
    sig = _python_signature(obj, method)
    if sig is None and hasattr(ns, name + "_"):  # nn.init's deprecated aliases wrap name_
        sig = _python_signature(getattr(ns, name + "_"), method)
    if sig is not None:
        return [sig]
    for stub_name in dict.fromkeys((name, getattr(obj, "__name__", name))):
        for rel, cls in STUBS[space]:
            defs = _stub_defs(rel, cls).get(stub_name)
            if defs:
                sigs = _clean_stub_overloads([_from_stub(f, method) for f in defs])
                return _apply_fixes(space, name, sigs)
    return None


# ---- mininn's side --------------------------------------------------------------------------
def shared_names(space: str) -> Iterator[str]:
    mod, ns = SPACES[space]
    for name in sorted(dir(mod)):
        if name.startswith("_") or not hasattr(ns, name):
            continue
        obj = getattr(mod, name)
        if callable(obj) and not inspect.isclass(obj) and not inspect.ismodule(obj):
            yield name


def mininn_signature(space: str, name: str) -> inspect.Signature:
    obj = getattr(SPACES[space][0], name)
    sig = inspect.signature(obj)
    if space == "Tensor" and inspect.isfunction(obj):
        return sig.replace(parameters=list(sig.parameters.values())[1:])
    return sig


# ---- the comparison ------------------------------------------------------------------------
def _positional(sig: inspect.Signature) -> list[inspect.Parameter]:
    return [p for p in sig.parameters.values() if p.kind in POSITIONAL]


def _has(sig: inspect.Signature, kind: Any) -> bool:
    return any(p.kind == kind for p in sig.parameters.values())


def _unqualified(value: Any) -> str:
    """``torch.strided`` and ``mininn.strided`` both as ``strided``."""
    return str(value).removeprefix("torch.").removeprefix("mininn.")


def _same_default(want: Any, got: Any) -> bool:
    if want is UNKNOWN:
        return True
    if isinstance(want, (tuple, list)) and not want:  # torch's schemas spell "not given" []
        return got is None or got == want
    if isinstance(want, Expr) or not isinstance(want, (type(None), bool, int, float, str, tuple, list)):
        return _unqualified(want) == _unqualified(got)
    if isinstance(want, bool) or isinstance(got, bool):
        return type(want) is type(got) and want == got
    if isinstance(want, (tuple, list)):
        return isinstance(got, (tuple, list)) and list(want) == list(got)
    return (want is None) == (got is None) and type(got) in (int, float, str, type(None)) and want == got


def _overload_problems(s: inspect.Signature, mine: inspect.Signature,
                       names_at: dict[int, set[str]]) -> Iterator[tuple[str, str]]:
    mine_pos = _positional(mine)
    var_pos, var_kw = _has(mine, P.VAR_POSITIONAL), _has(mine, P.VAR_KEYWORD)
    for i, p in enumerate(_positional(s)):
        private = p.name.startswith("_")  # torch-private (``_stacklevel``): compared where mininn has it
        if i >= len(mine_pos) and not var_pos and not private:
            yield p.name, f"torch takes `{p.name}` as positional argument {i}; mininn takes {len(mine_pos)}"
        elif i < len(mine_pos) and mine_pos[i].name not in names_at[i] and p.kind == P.POSITIONAL_OR_KEYWORD:
            yield p.name, f"positional argument {i} is `{p.name}` in torch, `{mine_pos[i].name}` in mininn"
    if _has(s, P.VAR_POSITIONAL) and not var_pos:
        yield "*", "torch takes any number of positional arguments here; mininn does not"
    for p in s.parameters.values():
        q = mine.parameters.get(p.name)
        if p.kind in NAMED and not var_kw and (q is None or q.kind not in NAMED) and p.name[0] != "_":
            yield p.name, f"keyword `{p.name}` is not accepted"
    args = [None for p in _positional(s) if p.default is P.empty]  # (private ones have defaults)
    kwargs = {p.name: None for p in s.parameters.values()
              if p.kind == P.KEYWORD_ONLY and p.default is P.empty}
    try:
        mine.bind(*args, **kwargs)
    except TypeError as e:
        call = ", ".join([*map(str, range(len(args))), *kwargs])
        yield "*", f"a call with torch's required arguments ({call}) fails: {e}"


def _without(theirs: list[inspect.Signature], mine: inspect.Signature,
             skip: set[str]) -> tuple[list[inspect.Signature], set[str]]:
    """torch's overloads less the excepted parameters that mininn lacks (and less the overloads
    that require one), with the excepted names that were dropped."""
    kept, dropped = [], set()
    for s in theirs:
        params = []
        for p in s.parameters.values():
            if p.name in skip and p.name not in mine.parameters:
                dropped.add(p.name)
                if p.default is P.empty and p.kind not in (P.VAR_POSITIONAL, P.VAR_KEYWORD):
                    break
                continue
            params.append(p)
        else:
            kept.append(s.replace(parameters=params))
    return kept, dropped


def problems(theirs: list[inspect.Signature], mine: inspect.Signature,
             skip: frozenset[str] = frozenset()) -> tuple[list[tuple[str, str]], set[str]]:
    """(parameter, what differs) for each way ``mine`` refuses or changes a call torch allows,
    and which of the excepted parameter names ``skip`` were needed."""
    theirs, dropped = _without(theirs, mine, set(skip))
    names_at: dict[int, set[str]] = defaultdict(set)
    for s in theirs:
        for i, p in enumerate(_positional(s)):
            names_at[i].add(p.name)
    found = [pr for s in theirs for pr in _overload_problems(s, mine, names_at)]
    for q in mine.parameters.values():
        there = [s.parameters[q.name] for s in theirs if q.name in s.parameters]
        defaults = [p.default for p in there if p.default is not P.empty]
        if q.default is not P.empty and defaults and not any(_same_default(d, q.default) for d in defaults):
            found.append((q.name, f"default of `{q.name}`: torch {defaults[0]!r}, mininn {q.default!r}"))
        if q.kind in POSITIONAL and there and all(p.kind == P.KEYWORD_ONLY for p in there):
            found.append((q.name, f"`{q.name}` is keyword-only in torch, positional in mininn"))
    return list(dict.fromkeys(found)), dropped


def _exceptions_for(space: str, name: str) -> dict[str, tuple[str, str, str]]:
    return {k[2]: k for k in EXCEPTIONS if k[0] in ("*", space) and k[1] in ("*", name)}


def all_problems() -> tuple[list[str], set[tuple[str, str, str]], set[str]]:
    """Every difference not excepted, the exceptions that matched, and names torch has no signature for."""
    left, used, unknown = [], set(), set()
    for space in SPACES:
        for name in shared_names(space):
            theirs = torch_signatures(space, name)
            if not theirs:
                unknown.add(f"{space}.{name}")
                continue
            keys = _exceptions_for(space, name)
            found, dropped = problems(theirs, mininn_signature(space, name), frozenset(keys))
            used.update(keys[p] for p in dropped)
            left += [f"{space}.{name}: {what}" for _, what in found]
    return left, used, unknown


@functools.cache
def _result() -> tuple[list[str], set[tuple[str, str, str]], set[str]]:
    return all_problems()


def test_every_shared_callable_accepts_torchs_parameter_names_and_kinds() -> None:
    left, _, _ = _result()
    assert not left, f"{len(left)} differences from torch:\n" + "\n".join(left)


def test_every_exception_is_still_needed() -> None:
    _, used, _ = _result()
    assert set(EXCEPTIONS) - used == set()


def test_torch_signature_is_found_for_every_shared_name() -> None:
    _, _, unknown = _result()
    assert unknown == NO_TORCH_SIGNATURE
    assert sum(1 for space in SPACES for _ in shared_names(space)) > 900


# ---- the stub-reading rules, against torch's argument parser ------------------------------
def _raises_type_error(call: Any) -> bool:
    try:
        call()
    except TypeError:
        return True
    return False


def test_stub_fixes_are_torchs() -> None:
    x = torch.zeros(3)
    assert not _raises_type_error(lambda: torch.ones(2).requires_grad_(requires_grad=True))
    assert _raises_type_error(lambda: torch.ones(2).requires_grad_(mode=True))
    assert _raises_type_error(lambda: x.uniform_(from_=0.0, to=1.0))
    assert _raises_type_error(lambda: x.random_(from_=0, to=3))
    assert not _raises_type_error(lambda: x.uniform_(0.0, to=1.0))
    assert _raises_type_error(lambda: torch.from_numpy(ndarray=np.zeros(2)))
    assert _raises_type_error(lambda: torch.linspace(0, 1))
    assert _raises_type_error(lambda: torch.logspace(0, 1))


def test_a_lone_self_is_input_and_self_overloads_beside_input_are_deprecated_or_scalar_first() -> None:
    x = torch.ones(3)
    assert torch.numel(input=x) == 3  # the stub says numel(self)
    assert _raises_type_error(lambda: torch.numel(self=x))
    with pytest.warns(UserWarning, match="This overload of add is deprecated"):
        torch.add(x, 2, x)  # add(self, alpha, other)
    assert torch.pow(self=2, exponent=x).tolist() == [2.0, 2.0, 2.0]  # scalar first, named self


# ---- the keyword calls model files make, against torch's results ---------------------------
def _same(got: Any, want: Any) -> None:
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _same(g, w)
        return
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)


DATA = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7


def _both() -> tuple[Any, Any]:
    return mininn.tensor(DATA), torch.tensor(DATA)


CALLS = {
    "zeros(size=)": lambda m, x: m.zeros(size=(2, 3)),
    "ones(size=, dtype=)": lambda m, x: m.ones(size=[2, 3], dtype=m.float64),
    "full(size=, fill_value=)": lambda m, x: m.full(size=(2,), fill_value=1.5, layout=m.strided),
    "zeros_like(input=)": lambda m, x: m.zeros_like(input=x, dtype=m.int64, pin_memory=False),
    "ones_like(memory_format=)": lambda m, x: m.ones_like(x, memory_format=m.preserve_format),
    "full_like(input=, fill_value=)": lambda m, x: m.full_like(input=x, fill_value=2.0),
    "empty(size=).shape": lambda m, x: m.zeros(len(m.empty(size=(2, 5)).shape)),
    "new_zeros(size=)": lambda m, x: x.new_zeros(size=(2, 2)),
    "new_ones(*size)": lambda m, x: x.new_ones(2, 3),
    "arange(end=)": lambda m, x: m.arange(start=1, end=7, step=2),
    "split(split_size=, dim=)": lambda m, x: x.split(split_size=2, dim=2),
    "torch.split(split_size_or_sections=)": lambda m, x: m.split(x, split_size_or_sections=[1, 2], dim=1),
    "cat(tensors=, dim=)": lambda m, x: m.cat(tensors=[x, x], dim=1),
    "stack(tensors=, dim=)": lambda m, x: m.stack(tensors=(x, x), dim=0),
    "tensor_split(sections=)": lambda m, x: m.tensor_split(x, sections=3, dim=2),
    "tensor_split(indices=)": lambda m, x: x.tensor_split(indices=[1, 3], dim=2),
    "hsplit(indices=)": lambda m, x: m.hsplit(x, indices=[1]),
    "x.hsplit(*indices)": lambda m, x: x.hsplit(1, 2),
    "reshape(shape=)": lambda m, x: x.reshape(shape=(4, 6)),
    "torch.reshape(input=, shape=)": lambda m, x: m.reshape(input=x, shape=(-1,)),
    "view(size=)": lambda m, x: x.view(size=(6, 4)),
    "view(dtype=)": lambda m, x: x.view(dtype=m.int32),
    "view(dtype)": lambda m, x: x.view(m.float16),
    "permute(dims=)": lambda m, x: x.permute(dims=(2, 0, 1)),
    "torch.permute(input=, dims=)": lambda m, x: m.permute(input=x, dims=[1, 0, 2]),
    "flip(dims=)": lambda m, x: x.flip(dims=(0, 2)),
    "repeat(repeats=)": lambda m, x: x.repeat(repeats=(1, 2, 1)),
    "tile(dims=)": lambda m, x: m.tile(x, dims=(2,)),
    "expand(size=)": lambda m, x: x[:1].expand(size=(3, 3, 4)),
    "broadcast_to(size=)": lambda m, x: m.broadcast_to(x, size=(2, 2, 3, 4)),
    "squeeze(*dims)": lambda m, x: x[:1, :, :1].squeeze(0, 2),
    "count_nonzero(*dims)": lambda m, x: x.count_nonzero(0, 2),
    "swapaxes(axis0=, axis1=)": lambda m, x: m.swapaxes(x, axis0=0, axis1=2),
    "max(other=)": lambda m, x: m.max(x, other=x.flip(0)),
    "x.min(other=)": lambda m, x: x.min(other=x.flip(0)),
    "x.where(condition, other)": lambda m, x: x.where(x > 0, -x),
    "dot(tensor=)": lambda m, x: m.dot(x[0, 0], tensor=x[1, 0]),
    "sort(stable=)": lambda m, x: m.sort(x.round(), dim=1, stable=True),
    "det(input=)": lambda m, x: m.det(input=x.double()[:, :3, :3] + 10 * m.eye(3, dtype=m.float64)),
    "var(unbiased=)": lambda m, x: x.var(dim=1, unbiased=False),
    "nan_to_num(nan=None)": lambda m, x: m.nan_to_num(x.log(), nan=None),
    "gather(sparse_grad=)": lambda m, x: m.gather(x, 2, m.zeros(2, 3, 1, dtype=m.int64), sparse_grad=False),
    "contiguous(memory_format=)": lambda m, x: x.contiguous(memory_format=m.contiguous_format),
    "clone(memory_format=)": lambda m, x: m.clone(x, memory_format=m.preserve_format),
    "F.interpolate(input=, scale_factor=)": lambda m, x: m.nn.functional.interpolate(
        input=x, scale_factor=2, mode="nearest"),
    "F.softmax(input=, dim=, dtype=)": lambda m, x: m.nn.functional.softmax(input=x, dim=-1, dtype=m.float64),
    "F.pad(input=, pad=)": lambda m, x: m.nn.functional.pad(input=x, pad=(1, 1), mode="constant", value=0.5),
    "torch.exp_(input=)": lambda m, x: m.exp_(input=x.clone() / 10),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_keyword_call_equals_torchs(name: str) -> None:
    x, t = _both()
    _same(CALLS[name](mininn, x), CALLS[name](torch, t))


@pytest.mark.parametrize("factory", ["rand", "randn"])
def test_generator_keyword_of_random_like_draws_from_that_generator(factory: str) -> None:
    x = mininn.zeros(3, 4)
    a = getattr(mininn, f"{factory}_like")(input=x, generator=mininn.Generator().manual_seed(7))
    b = getattr(mininn, factory)(size=(3, 4), generator=mininn.Generator().manual_seed(7))
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_size_given_twice_is_torchs_type_error() -> None:
    with pytest.raises(TypeError) as want:
        torch.zeros(2, size=(3,))
    with pytest.raises(TypeError) as got:
        mininn.zeros(2, size=(3,))
    assert str(got.value) == str(want.value)
    with pytest.raises(TypeError, match="reshape\\(\\) got multiple values for argument 'shape'"):
        mininn.zeros(6).reshape(2, 3, shape=(3, 2))


def test_layout_other_than_strided_is_refused_and_changes_nothing() -> None:
    with pytest.raises(NotImplementedError, match="layout=torch.sparse_coo is not supported"):
        mininn.zeros(2, layout=torch.sparse_coo)
    with pytest.raises(NotImplementedError, match="layout=torch.sparse_csr is not supported"):
        mininn.ones_like(mininn.zeros(2), layout=torch.sparse_csr)
    assert mininn.zeros(2, layout=torch.strided).tolist() == [0.0, 0.0]  # torch's own strided passes


def test_pin_memory_true_fails_as_in_torch_on_the_cpu() -> None:
    with pytest.raises(RuntimeError) as want:
        torch.zeros(2, pin_memory=True)
    with pytest.raises(RuntimeError) as got:
        mininn.zeros(2, pin_memory=True)
    assert str(got.value) == str(want.value)


def test_is_contiguous_in_another_memory_format_is_refused() -> None:
    x = mininn.zeros(1, 2, 3, 3)
    assert x.is_contiguous() and x.is_contiguous(memory_format=mininn.contiguous_format)
    with pytest.raises(NotImplementedError, match="channels_last"):
        x.is_contiguous(memory_format=mininn.channels_last)


def test_stable_is_keyword_only_as_in_torch() -> None:
    assert _raises_type_error(lambda: torch.sort(torch.zeros(3), 0, False, True))
    assert _raises_type_error(lambda: mininn.sort(mininn.zeros(3), 0, False, True))


def test_max_with_both_dim_and_other_is_refused() -> None:
    x = mininn.zeros(3)
    with pytest.raises(TypeError, match="either dim"):
        mininn.max(x, 0, other=x)


def test_view_as_a_wider_dtype_needs_a_divisible_last_dim_as_in_torch() -> None:
    with pytest.raises(RuntimeError) as want:
        torch.zeros(2, 3).view(torch.float64)
    with pytest.raises(RuntimeError) as got:
        mininn.zeros(2, 3).view(mininn.float64)
    assert str(got.value) == str(want.value)


def test_tensor_split_takes_one_of_its_spellings() -> None:
    with pytest.raises(TypeError, match="exactly one of sections, indices"):
        mininn.tensor_split(mininn.zeros(4), sections=2, indices=[1])
