"""Registering and assigning a module's attributes against torch 2.13, beyond test_module.py:
names, clashes between kinds, re-registration, non-persistent buffers through reassignments,
slot positions, set_submodule, registration hooks, dir, and mixins' __init__."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from _nn_twins import arr, same  # noqa: E402

_REGISTER = ["register_buffer", "register_parameter", "add_module", "register_module"]


def _value_for(ns, method: str):
    """A value each registration method accepts."""
    return {
        "register_buffer": ns.T(arr(2)),
        "register_parameter": ns.nn.Parameter(ns.T(arr(2))),
        "add_module": ns.Act(),
        "register_module": ns.Act(),
        "assign_buffer": ns.nn.Buffer(ns.T(arr(2))),
    }[method]


def _register(ns, m, method: str, name, value) -> None:
    if method == "assign_buffer":
        setattr(m, name, value)
    else:
        getattr(m, method)(name, value)


@pytest.mark.parametrize("name", [1, None])
@pytest.mark.parametrize("method", _REGISTER)
def test_registration_name_must_be_a_string(method: str, name) -> None:
    kind, _message = same(lambda ns: getattr(ns.nn.Module(), method)(name, _value_for(ns, method)))
    assert kind == "TypeError"


@pytest.mark.parametrize("existing", ["plain", "parameter", "buffer", "module"])
@pytest.mark.parametrize("method", [*_REGISTER, "assign_buffer"])
def test_registering_over_another_kind_of_attribute(existing: str, method: str) -> None:
    def scenario(ns):
        m = ns.nn.Module()
        if existing == "plain":
            m.taken = 5
        elif existing == "parameter":
            m.register_parameter("taken", ns.nn.Parameter(ns.T(arr(1))))
        elif existing == "buffer":
            m.register_buffer("taken", ns.T(arr(1)))
        else:
            m.add_module("taken", ns.nn.Module())
        _register(ns, m, method, "taken", _value_for(ns, method))
        return sorted(m._parameters), sorted(m._buffers), sorted(m._modules)

    same(scenario)


@pytest.mark.parametrize("method", [*_REGISTER, "assign_buffer"])
def test_registering_the_same_kind_again_replaces_the_value(method: str) -> None:
    def scenario(ns):
        m = ns.nn.Module()
        first, second = _value_for(ns, method), _value_for(ns, method)
        _register(ns, m, method, "slot", first)
        _register(ns, m, method, "slot", second)
        replaced = m.slot is second
        if method != "assign_buffer":
            _register(ns, m, method, "slot", None)
        return replaced, m.slot is None, sorted(m._parameters), sorted(m._buffers), sorted(m._modules)

    same(scenario)


def test_non_persistent_buffer_through_reassignments() -> None:
    def scenario(ns):
        m = ns.nn.Module()
        steps = []

        def note(step):
            steps.append((step, [k for k, _ in m.named_buffers()], list(m.state_dict())))

        m.cache = ns.nn.Buffer(ns.T(arr(2)), persistent=False)
        note("non-persistent")
        m.cache = ns.nn.Buffer(ns.T(arr(2)))
        note("persistent")
        m.cache = ns.nn.Buffer(ns.T(arr(2)), persistent=False)
        note("non-persistent again")
        m.cache = None
        note("None")
        m.cache = ns.T(arr(2))
        note("plain tensor")
        steps.append(repr(m.load_state_dict({})))
        m.cache = ns.nn.Parameter(ns.T(arr(2)))
        note("parameter")
        m.scratch = ns.nn.Buffer(ns.T(arr(1)), persistent=False)
        del m.scratch
        note("deleted")
        return steps, sorted(m._non_persistent_buffers_set)

    same(scenario)


@pytest.mark.parametrize("persistent", [True, False])
def test_subclass_register_buffer_override_receives_buffer_assignments(persistent: bool) -> None:
    def scenario(ns):
        class AlwaysPersistent(ns.nn.Module):
            def __init__(self):
                super().__init__()
                self.stats = ns.nn.Buffer(ns.T(arr(2)), persistent=persistent)

            def register_buffer(self, name, tensor):  # no ``persistent`` parameter
                super().register_buffer(name, tensor, True)

        return list(AlwaysPersistent().state_dict())

    outcome = same(scenario)
    if persistent:
        assert outcome == ("ok", ["stats"])
    else:
        assert outcome[0] == "RuntimeError"


@pytest.mark.parametrize("kind", ["parameter", "child"])
def test_attribute_assignment_keeps_slot_positions(kind: str) -> None:
    def scenario(ns):
        m = ns.nn.Module()
        if kind == "parameter":
            a, b, c = (ns.nn.Parameter(ns.T(arr(n))) for n in (2, 3, 4))
            listing = m.parameters
        else:
            a, b, c = (ns.Lin(n, n) for n in (1, 2, 3))
            listing = m.children
        names = {id(a): "a", id(b): "b", id(c): "c"}
        steps = []

        def note(step):
            steps.append((step, [names[id(v)] for v in listing()], "a" in m.__dict__))

        m.a = None
        note("a = None")
        m.a, m.b = a, b
        note("a, b assigned")
        m.a = None
        note("a = None again")
        m.a = a
        note("a back")
        m.a = c
        note("a replaced by c")
        del m.a
        note("del a")
        del m.b
        note("del b")
        return steps

    same(scenario)


def test_buffer_set_to_none_and_back_is_saved_as_a_copy() -> None:
    def scenario(ns):
        m = ns.nn.Module()
        buf = ns.nn.Buffer(ns.T(arr(2)))
        m.buf = buf
        m.buf = None
        cleared = (m.buf, "buf" in m.__dict__, list(m.state_dict()))
        m.buf = buf
        return cleared, m.buf is buf, m.state_dict()["buf"] is buf

    assert same(scenario) == ("ok", ((None, False, []), True, False))


def test_add_module_accepts_none_aliases_and_replacements() -> None:
    def scenario(ns):
        net = ns.nn.Module()
        shared, other = ns.Lin(1, 2), ns.Lin(2, 1)
        net.first = shared
        net.add_module("alias", shared)
        net.add_module("empty", None)
        net.register_module("first", other)
        rejected = None
        try:
            net.add_module("text", "not a module")
        except TypeError as e:
            rejected = e.args[0]
        return (
            net.alias is shared,
            net.first is other,
            net.empty,
            [k for k, _ in net.named_children()],
            rejected,
        )

    same(scenario)


@pytest.mark.parametrize(
    "call",
    [
        "m.set_submodule('block.inner', ns.Act()) or m.get_submodule('block.inner')",
        "m.set_submodule('block.leaf', ns.Act(), strict=True) or m.get_submodule('block.leaf')",
        "m.set_submodule('block.fresh', ns.Act(), strict=True)",
        "m.set_submodule('block.fresh', ns.Act()) or list(m.block._modules)",
        "m.set_submodule('nowhere.leaf', ns.Act())",
        "m.set_submodule('0', ns.Act(), strict=True)",
        "m.set_submodule('0', ns.Act()) or list(m._modules)",
        "m.set_submodule('', ns.Act())",
        "m.set_submodule('label', ns.Act())",
        "m.set_submodule('block.leaf', 'text')",
    ],
)
def test_set_submodule_matches_torch(call: str) -> None:
    def scenario(ns):
        m = ns.nn.Module()
        m.block = ns.nn.Module()
        m.block.leaf = ns.Lin(1, 1)
        m.label = "text"
        out = eval(call, {"m": m, "ns": ns})
        return type(out).__name__ if isinstance(out, ns.nn.Module) else out

    same(scenario)


@pytest.mark.parametrize("kind", ["buffer", "module", "parameter"])
@pytest.mark.parametrize("returns", ["none", "the_value"])
def test_registration_hooks_see_every_registration(kind: str, returns: str) -> None:
    def scenario(ns):
        seen = []

        def hook(module, name, value):
            seen.append((type(module).__name__, name))
            return value if returns == "the_value" else None

        class Block(ns.nn.Module):
            def __init__(self):
                super().__init__()
                self.layer = ns.Lin(2, 2)
                self.register_buffer("count", ns.T(arr(1)))

        register = getattr(ns.nn.modules.module, f"register_module_{kind}_registration_hook")
        with register(hook):
            net = ns.nn.Sequential(Block(), Block())
        return seen, [k for k, _ in net.named_parameters()], [k for k, _ in net.named_buffers()]

    same(scenario)


def test_dir_entries_all_resolve() -> None:
    def scenario(ns):
        m = ns.Lin(2, 2)
        m._hidden_child = ns.Act()
        m._hidden_param = ns.nn.Parameter(ns.T(arr(2)))
        m._hidden_buffer = ns.nn.Buffer(ns.T(arr(2)))
        names = dir(m)
        unresolved = [k for k in names if not hasattr(m, k)]
        return [k for k in names if k.startswith("_hidden")], unresolved

    assert same(scenario) == ("ok", (["_hidden_buffer", "_hidden_child", "_hidden_param"], []))


@pytest.mark.parametrize("order", ["mixin_first", "module_first"])
@pytest.mark.parametrize("call_super_init", [False, True])
def test_mixin_init_runs_when_reached_through_super(order: str, call_super_init: bool) -> None:
    def scenario(ns):
        class Mixin:
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.mixin_ran = True

        bases = (Mixin, ns.nn.Module) if order == "mixin_first" else (ns.nn.Module, Mixin)
        cls = type("Mixed", bases, {"call_super_init": call_super_init})
        return hasattr(cls(), "mixin_ran")

    expected = order == "mixin_first" or call_super_init
    assert same(scenario) == ("ok", expected)
