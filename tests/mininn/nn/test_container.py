"""Sequential, ModuleList, ModuleDict, ParameterList and ParameterDict against torch 2.13:
indexing, slicing, mutation, key naming, reprs and errors."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _nn_twins import MININN, arr, same, to_np  # noqa: E402

import mininn  # noqa: E402
from mininn import nn  # noqa: E402


def _names(mods):
    return [type(m).__name__ if m is not None else None for m in mods]


def _seq(ns):
    return ns.nn.Sequential(ns.Lin(2, 3), ns.Act(), ns.Lin(3, 2, start=1.0), ns.Norm(2))


# ---- Sequential -------------------------------------------------------------------------------


def test_sequential_forward_chains_modules() -> None:
    same(lambda ns: np.round(to_np(_seq(ns)(ns.T(arr(2, 2)))), 4).tolist())


def test_sequential_from_ordered_dict_keeps_names() -> None:
    def scenario(ns):
        s = ns.nn.Sequential(OrderedDict(fc=ns.Lin(1, 1), act=ns.Act()))
        return list(s.state_dict()), [k for k, _ in s.named_children()], repr(s)

    assert same(scenario)[1][0] == ["fc.weight", "fc.bias"]


@pytest.mark.parametrize(
    "expr",
    [
        "_names([s[0], s[-1], s[1]])",
        "s[4]",
        "s[-5]",
        "s['a']",
        "len(s)",
        "_names(s)",
        "repr(s[1:3])",
        "type(s[::2]).__name__, len(s[::2]), list(s[::2]._modules)",
        "list(s[::-1]._modules)",
        "len(s[5:])",
    ],
)
def test_sequential_indexing_and_slicing(expr: str) -> None:
    same(lambda ns: eval(expr, {"s": _seq(ns), "_names": _names}))


@pytest.mark.parametrize(
    "stmt",
    [
        "s.append(ns.Act())",
        "s.insert(1, ns.Act())",
        "s.insert(-1, ns.Act())",
        "s.insert(4, ns.Act())",
        "s.insert(5, ns.Act())",
        "s.insert(-5, ns.Act())",
        "s.insert(0, 3)",
        "s.extend([ns.Act(), ns.Act()])",
        "s.pop(1)",
        "s.pop(slice(1, 3))",
        "s.__delitem__(0)",
        "s.__delitem__(slice(0, 4, 2))",
        "s.__setitem__(-1, ns.Act())",
        "s.__setitem__(9, ns.Act())",
        "s.__iadd__(ns.nn.Sequential(ns.Act()))",
        "s.__iadd__([ns.Act()])",
        "s.__imul__(2)",
        "s.__imul__(0)",
        "s.__imul__('x')",
    ],
)
def test_sequential_mutation_matches_torch(stmt: str) -> None:
    def scenario(ns):
        s = _seq(ns)
        out = eval(stmt, {"s": s, "ns": ns})
        returned = "self" if out is s else (type(out).__name__ if out is not None else None)
        return returned, list(s._modules), _names(s), list(s.state_dict())

    same(scenario)


def test_sequential_add_and_mul_build_new_containers() -> None:
    def scenario(ns):
        a, b = _seq(ns), ns.nn.Sequential(ns.Act())
        c = a + b
        d = b * 3
        e = 2 * b
        return (c is not a, list(c._modules), _names(c), list(d._modules), list(e._modules), len(a))

    same(scenario)
    assert same(lambda ns: _seq(ns) + ns.nn.ModuleList())[0] == "ValueError"
    assert same(lambda ns: _seq(ns) * -1)[0] == "ValueError"


def test_sequential_dir_has_no_digit_names() -> None:
    assert not any(k.isdigit() for k in dir(_seq(MININN)))


# ---- ModuleList -------------------------------------------------------------------------------


def _mlist(ns):
    return ns.nn.ModuleList([ns.Lin(1, 1), ns.Act(), ns.Lin(1, 1)])


@pytest.mark.parametrize(
    "stmt",
    [
        "m.append(ns.Act())",
        "m.extend([ns.Act()])",
        "m.extend(ns.Act())",
        "m.insert(1, ns.Act())",
        "m.insert(0, ns.Act())",
        "m.pop(-1)",
        "m.pop(slice(0, 2))",
        "m.__delitem__(1)",
        "m.__delitem__(slice(None, None, 2))",
        "m.__setitem__(-3, ns.Act())",
        "m.__setitem__(3, ns.Act())",
        "m.__getitem__(3)",
        "m.__getitem__(-4)",
        "m.__getitem__(slice(1, None))",
        "m.__iadd__([ns.Act()])",
        "m + [ns.Act()]",
    ],
)
def test_module_list_operations_match_torch(stmt: str) -> None:
    def scenario(ns):
        m = _mlist(ns)
        out = eval(stmt, {"m": m, "ns": ns})
        returned = "self" if out is m else type(out).__name__
        return returned, list(m._modules), _names(m), list(m.state_dict()), len(m)

    same(scenario)


def test_module_list_repr_compresses_repeated_children() -> None:
    def scenario(ns):
        class Block(ns.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = ns.Lin(2, 2)

        m = ns.nn.ModuleList([Block(), Block(), Block(), ns.Act(), Block(), ns.Act(), ns.Act()])
        return repr(m), repr(ns.nn.ModuleList()), repr(ns.nn.ModuleList([ns.Act()]))

    out = same(scenario)[1]
    assert "(0-2): 3 x Block(" in out[0] and "(5-6): 2 x Act()" in out[0] and out[1] == "ModuleList()"


def test_module_list_in_module_registers_parameters() -> None:
    def scenario(ns):
        class Net(ns.nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = ns.nn.ModuleList(ns.Lin(2, 2) for _ in range(2))

        return [k for k, _ in Net().named_parameters()]

    assert same(scenario) == ("ok", ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias"])


# ---- ModuleDict -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stmt",
    [
        "d['c'] = ns.Act()",
        "d['a'] = ns.Lin(1, 1)",
        "del d['a']",
        "d.pop('b')",
        "d.pop('zz')",
        "d.clear()",
        "d.update({'z': ns.Act(), 'y': ns.Act()})",
        "d.update([('z', ns.Act()), ('y', ns.Act())])",
        "d.update([('z', ns.Act(), 1)])",
        "d.update([3])",
        "d.update(3)",
        "d['x.y'] = ns.Act()",
        "d[1] = ns.Act()",
        "d['q'] = 1",
    ],
)
def test_module_dict_operations_match_torch(stmt: str) -> None:
    def scenario(ns):
        d = ns.nn.ModuleDict({"b": ns.Lin(1, 1), "a": ns.Act()})
        exec(stmt, {"d": d, "ns": ns})
        items = [k for k, _ in d.items()]
        return list(d), list(d.keys()), _names(d.values()), items, len(d), "a" in d, repr(d)

    same(scenario)


def test_module_dict_from_another_module_dict_and_repr() -> None:
    same(lambda ns: repr(ns.nn.ModuleDict(ns.nn.ModuleDict({"a": ns.Act()}))))


# ---- ParameterList / ParameterDict -------------------------------------------------------------


def test_parameter_list_wraps_tensors_and_names_keys() -> None:
    def scenario(ns):
        pl = ns.nn.ParameterList([ns.T(arr(2, 3)), ns.nn.Parameter(ns.T(arr(2, dtype=np.float64))), "meta"])
        pl.append(ns.T(arr(1)))
        return (
            [type(p).__name__ for p in pl],
            [k for k, _ in pl.named_parameters()],
            list(pl.state_dict()),
            repr(pl),
            len(pl),
            type(pl[-1]).__name__,
            len(pl[1:]),
        )

    same(scenario)


@pytest.mark.parametrize(
    "expr",
    [
        "pl[5]",
        "pl.extend(ns.T(arr(2)))",
        "pl.extend(3)",
        "pl(1)",
        "pl.__setitem__(0, ns.T(arr(3))) or [tuple(p.shape) for p in pl]",
    ],
)
def test_parameter_list_errors_match_torch(expr: str) -> None:
    def scenario(ns):
        pl = ns.nn.ParameterList([ns.T(arr(2))])
        return eval(expr, {"pl": pl, "ns": ns, "arr": arr})

    same(scenario)


def test_parameter_dict_operations_match_torch() -> None:
    def scenario(ns):
        pd = ns.nn.ParameterDict({"b": ns.T(arr(2)), "a": ns.nn.Parameter(ns.T(arr(1)))})
        pd["c"] = ns.T(arr(2, 2, dtype=np.float64))
        pd.update([("d", ns.T(arr(1)))])
        pd.update(OrderedDict(z=ns.T(arr(1)), y=ns.T(arr(1))))
        out = [list(pd), repr(pd), [k for k, _ in pd.named_parameters()], "a" in pd, len(pd)]
        out.append(type(pd.pop("d")).__name__)
        out.append(pd.popitem()[0])
        out.append(pd.get("nope", 5))
        out.append(pd.setdefault("n", None))
        out.append(list(reversed(pd)))
        out.append(list(pd.copy()))
        out.append(list(pd.fromkeys(["x", "w"], ns.T(arr(1)))))
        out.append(list(pd | ns.nn.ParameterDict({"q": ns.T(arr(1))})))
        pd.clear()
        out.append(len(pd))
        return out

    same(scenario)


@pytest.mark.parametrize(
    "expr",
    ["pd[1]", "pd['missing']", "pd.update(3)", "pd.update([(1, 2, 3)])", "pd(1)"],
)
def test_parameter_dict_errors_match_torch(expr: str) -> None:
    same(lambda ns: eval(expr, {"pd": ns.nn.ParameterDict({"a": ns.T(arr(1))}), "ns": ns}))


def test_containers_survive_state_dict_round_trip_and_to() -> None:
    m = nn.Sequential(
        nn.ModuleDict({"lin": MININN.Lin(2, 2)}),
        nn.ParameterList([mininn.tensor(arr(2))]),
        nn.ParameterDict({"p": mininn.tensor(arr(3))}),
    )
    keys = list(m.state_dict())
    assert keys == ["0.lin.weight", "0.lin.bias", "1.0", "2.p"]
    p = m[1][0]
    m.double()
    assert m[1][0] is p and p.dtype == mininn.float64
    assert repr(m.load_state_dict(m.state_dict())) == "<All keys matched successfully>"
