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
what torch's argument parser accepts. Torch-private parameters (``_use_new_zipfile_...``)
are not compared.

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

# stub entries that torch's argument parser contradicts (each checked in test_stub_fixes_are_torchs)
STUB_FIXES: dict[tuple[str, str], dict[str, str | None]] = {
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


def _names(sig: inspect.Signature) -> set[str]:
    return set(sig.parameters)


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
        if i >= len(mine_pos) and not var_pos:
            yield p.name, f"torch takes `{p.name}` as positional argument {i}; mininn takes {len(mine_pos)}"
        elif i < len(mine_pos) and mine_pos[i].name not in names_at[i] and p.kind == P.POSITIONAL_OR_KEYWORD:
            yield p.name, f"positional argument {i} is `{p.name}` in torch, `{mine_pos[i].name}` in mininn"
    if _has(s, P.VAR_POSITIONAL) and not var_pos:
        yield "*", "torch takes any number of positional arguments here; mininn does not"
    for p in s.parameters.values():
        q = mine.parameters.get(p.name)
        if p.kind in NAMED and not var_kw and (q is None or q.kind not in NAMED):
            yield p.name, f"keyword `{p.name}` is not accepted"
    args = [None for p in _positional(s) if p.default is P.empty]
    kwargs = {p.name: None for p in s.parameters.values()
              if p.kind == P.KEYWORD_ONLY and p.default is P.empty}
    try:
        mine.bind(*args, **kwargs)
    except TypeError as e:
        call = ", ".join([*map(str, range(len(args))), *kwargs])
        yield "*", f"a call with torch's required arguments ({call}) fails: {e}"


def _without(theirs: list[inspect.Signature], mine: inspect.Signature,
             skip: set[str]) -> tuple[list[inspect.Signature], set[str]]:
    """torch's overloads less private and excepted parameters that mininn lacks (and the
    overloads that require one), with the excepted names that were dropped."""
    kept, dropped = [], set()
    for s in theirs:
        params = []
        for p in s.parameters.values():
            if p.name.startswith("_"):
                continue
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
