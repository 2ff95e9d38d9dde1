"""Container protocols against torch 2.13, beyond test_container.py: integer tensors as
indices, named Sequential slots, Sequentials added into each other, calling a container,
ModuleDict.update's sources, and ParameterList / ParameterDict holding and copying values."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _nn_twins import arr, same  # noqa: E402


def _tags(items):
    return [getattr(m, "tag", type(m).__name__) for m in items]


def _tagged(ns, *tags):
    mods = []
    for tag in tags:
        m = ns.Act()
        m.tag = tag
        mods.append(m)
    return mods


def _container(ns, kind: str):
    if kind == "Sequential":
        return ns.nn.Sequential(*_tagged(ns, "a", "b", "c"))
    if kind == "ModuleList":
        return ns.nn.ModuleList(_tagged(ns, "a", "b", "c"))
    params = [ns.nn.Parameter(ns.T(arr(n))) for n in (1, 2, 3)]
    for p, tag in zip(params, "abc"):
        p.tag = tag
    return ns.nn.ParameterList(params)


@pytest.mark.parametrize("kind", ["Sequential", "ModuleList", "ParameterList"])
@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64])
def test_integer_tensor_works_as_an_index(kind: str, dtype) -> None:
    def scenario(ns):
        c = _container(ns, kind)
        got = c[ns.T(np.array(2, dtype))]
        replacement = _container(ns, kind)[0]
        c[ns.T(np.array(1, dtype))] = replacement
        return getattr(got, "tag", None), c[1] is replacement, len(c)

    assert same(scenario) == ("ok", ("c", True, 3))


def test_setitem_on_named_sequential_keeps_the_names() -> None:
    def scenario(ns):
        first, middle, last, new = _tagged(ns, "first", "middle", "last", "new")
        s = ns.nn.Sequential(OrderedDict([("head", first), ("body", middle), ("tail", last)]))
        s[0] = new
        s[-1] = new
        return list(s._modules), s.head is new, s.tail is new, _tags(s)

    assert same(scenario) == ("ok", (["head", "body", "tail"], True, True, ["new", "middle", "new"]))


def test_in_place_add_with_each_other() -> None:
    def scenario(ns):
        a, b, c, d = _tagged(ns, "a", "b", "c", "d")
        left, right = ns.nn.Sequential(a, b, c), ns.nn.Sequential(d)
        left += right
        right += left
        return _tags(left), _tags(right), list(right._modules)

    assert same(scenario) == (
        "ok",
        (["a", "b", "c", "d"], ["d", "a", "b", "c", "d"], ["0", "1", "2", "3", "4"]),
    )


def test_module_list_children_skip_repeats() -> None:
    def scenario(ns):
        a, b = _tagged(ns, "a", "b")
        ml = ns.nn.ModuleList([a, b, a])
        ml.extend([b])
        return _tags(ml), _tags(ml.children()), len(ml)

    assert same(scenario) == ("ok", (["a", "b", "a", "b"], ["a", "b"], 4))


@pytest.mark.parametrize("kind", ["ModuleList", "ModuleDict", "ParameterList", "ParameterDict"])
@pytest.mark.parametrize("args", ["none", "a_tensor"])
def test_calling_a_container_raises(kind: str, args: str) -> None:
    def scenario(ns):
        c = getattr(ns.nn, kind)()
        c(*([] if args == "none" else [ns.T(arr(1, 3))]))

    kind_, _message = same(scenario)
    assert kind_ != "ok"


@pytest.mark.parametrize("kind", ["ModuleList", "ParameterList"])
@pytest.mark.parametrize("how", ["iadd", "extend"])
def test_adding_a_single_item_to_a_list_container_raises(kind: str, how: str) -> None:
    def scenario(ns):
        c = getattr(ns.nn, kind)()
        item = ns.Act() if kind == "ModuleList" else ns.nn.Parameter(ns.T(arr(2)))
        if how == "iadd":
            c += item
        else:
            c.extend(item)

    assert same(scenario)[0] == "TypeError"


@pytest.mark.parametrize(
    "source",
    ["pairs", "ordered_dict", "plain_dict", "module_dict", "module", "list_of_modules", "list_of_lists"],
)
def test_module_dict_update_sources(source: str) -> None:
    def scenario(ns):
        x, y = _tagged(ns, "x", "y")
        update = {
            "pairs": lambda: [("x", x), ("y", y)],
            "ordered_dict": lambda: OrderedDict([("y", y), ("x", x)]),
            "plain_dict": lambda: {"y": y, "x": x},
            "module_dict": lambda: ns.nn.ModuleDict([("y", y), ("x", x)]),
            "module": lambda: x,
            "list_of_modules": lambda: [x],
            "list_of_lists": lambda: [[x]],
        }[source]()
        d = ns.nn.ModuleDict({"x": ns.Act(), "keep": ns.Act()})
        d.update(update)
        return list(d), _tags(d.values())

    same(scenario)


def test_parameter_list_mixes_parameters_and_other_values() -> None:
    def scenario(ns):
        pl = ns.nn.ParameterList()
        pl.append(ns.T(arr(2)))
        pl.extend([ns.T(arr(2)), "label"])
        pl += ["note", ns.T(arr(1))]
        kinds = [type(v).__name__ for v in pl]
        return kinds, [k for k, _ in pl.named_parameters()], [type(v).__name__ for v in pl[-2:]]

    assert same(scenario) == (
        "ok",
        (
            ["Parameter", "Parameter", "str", "str", "Parameter"],
            ["0", "1", "4"],
            ["str", "Parameter"],
        ),
    )


def test_parameter_dict_copy_setdefault_and_merge() -> None:
    def scenario(ns):
        def param():
            return ns.nn.Parameter(ns.T(arr(2)))

        pd = ns.nn.ParameterDict({"a": param(), "b": param()})
        steps = []
        copy = pd.copy()
        pd["only_in_original"] = param()
        copy["only_in_copy"] = param()
        steps.append((list(pd), list(copy), all(copy[k] is pd[k] for k in ("a", "b"))))
        kept, fresh = pd["a"], param()
        steps.append(
            (pd.setdefault("a", fresh) is kept, pd.setdefault("c", fresh) is fresh, pd.setdefault("d"))
        )
        del pd["d"]
        merged = pd | ns.nn.ParameterDict({"e": param()})
        pd |= ns.nn.ParameterDict({"f": param()})
        steps.append((list(merged), list(pd), type(merged).__name__))
        bad = None
        try:
            pd.update(param())
        except ValueError as e:
            bad = type(e).__name__
        steps.append(bad)
        return steps

    same(scenario)
