"""mininn.nn.Module against torch 2.13: construction, attribute protocol, registration,
dotted-path lookups, traversal order, modes, conversion, repr, dir and copying.

Each scenario runs on torch and on mininn (``_nn_twins.same``) and compares values,
exception types and ``e.args[0]`` (torch's text with ``torch`` -> ``mininn``).
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _nn_twins import MININN, TORCH, arr, norm, outcome, same, to_np  # noqa: E402

import mininn  # noqa: E402
from mininn import nn  # noqa: E402

# ---- construction ---------------------------------------------------------------------------


def test_init_rejects_keyword_and_positional_arguments() -> None:
    same(lambda ns: ns.nn.Module(foo=1))
    same(lambda ns: ns.nn.Module(1))


def test_init_sets_state_without_setattr() -> None:
    def keys(ns):
        return sorted(ns.nn.Module().__dict__)

    m = nn.Module()
    assert m.training is True
    assert sorted(m.__dict__) == keys(TORCH)


def test_call_super_init_forwards_arguments() -> None:
    class Base:
        def __init__(self, x: int) -> None:
            self.x = x

    class M(nn.Module, Base):
        call_super_init = True

    assert M(3).x == 3


def test_default_forward_raises_not_implemented() -> None:
    same(lambda ns: ns.nn.Module()(1))

    def subclass(ns):
        class Net(ns.nn.Module):
            pass

        return Net()(1)

    same(subclass)


# ---- __setattr__ / __getattr__ / __delattr__ --------------------------------------------------


def test_assigning_parameter_before_init_raises_attribute_error() -> None:
    def scenario(ns):
        class Bad(ns.nn.Module):
            def __init__(self):
                self.w = ns.nn.Parameter(ns.T(arr(2)))

        Bad()

    assert same(scenario) == ("AttributeError", "cannot assign parameters before Module.__init__() call")


def test_assigning_module_before_init_raises_attribute_error() -> None:
    def scenario(ns):
        class Bad(ns.nn.Module):
            def __init__(self):
                self.sub = ns.nn.Module()

        Bad()

    assert same(scenario) == ("AttributeError", "cannot assign module before Module.__init__() call")


def test_plain_attribute_before_init_and_buffer_before_init() -> None:
    def plain(ns):
        class Ok(ns.nn.Module):
            def __init__(self):
                self.x = 3
                super().__init__()

        return Ok().x

    assert same(plain) == ("ok", 3)

    def buffer(ns):
        class Bad(ns.nn.Module):
            def __init__(self):
                self.register_buffer("b", ns.T(arr(2)))

        Bad()

    same(buffer)

    def param(ns):
        class Bad(ns.nn.Module):
            def __init__(self):
                self.register_parameter("p", None)

        Bad()

    assert same(param)[1] == "cannot assign parameter before Module.__init__() call"


def test_assigning_tensor_to_parameter_name_raises_type_error() -> None:
    def scenario(ns):
        m = ns.Lin(2, 3)
        m.weight = ns.T(arr(3, 2))

    assert same(scenario) == (
        "TypeError",
        "cannot assign 'mininn.FloatTensor' as parameter 'weight' (mininn.nn.Parameter or None expected)",
    )


@pytest.mark.parametrize("value", ["int", "module", "double"])
def test_assigning_non_parameter_to_parameter_name_names_its_type(value: str) -> None:
    def scenario(ns):
        m = ns.Lin(2, 3)
        v = {"int": 3, "module": ns.nn.Module(), "double": ns.T(arr(3, 2, dtype=np.float64))}[value]
        m.bias = v

    same(scenario)


def test_none_keeps_a_registered_parameter_slot() -> None:
    def scenario(ns):
        m = ns.Lin(2, 3)
        m.bias = None
        return list(m._parameters), m.bias, [k for k, _ in m.named_parameters()], list(m.state_dict())

    assert same(scenario) == ("ok", (["weight", "bias"], None, ["weight"], ["weight"]))


def test_reassigning_a_name_moves_it_between_categories() -> None:
    def scenario(ns):
        m = ns.nn.Module()
        m.register_buffer("x", ns.T(arr(2)))
        m.x = ns.nn.Parameter(ns.T(arr(2)))  # buffer -> parameter
        a = (list(m._parameters), list(m._buffers), list(m._modules))
        m.y = ns.nn.Module()
        m.y = ns.nn.Parameter(ns.T(arr(1)))  # module -> parameter
        b = (list(m._parameters), list(m._modules))
        m.z = 5
        m.z = ns.nn.Parameter(ns.T(arr(1)))  # plain attribute -> parameter
        c = ("z" in m.__dict__, list(m._parameters))
        m.register_buffer("b", ns.T(arr(1)))
        m.b = ns.nn.Module()  # buffer -> module
        d = (list(m._buffers), list(m._modules))
        return a, b, c, d

    assert same(scenario) == (
        "ok",
        (
            (["x"], [], []),
            (["x", "y"], []),
            (False, ["x", "y", "z"]),
            ([], ["b"]),
        ),
    )


def test_module_cannot_replace_a_parameter() -> None:
    def scenario(ns):
        m = ns.Lin(2, 3)
        m.weight = ns.Lin(1, 1)

    kind, msg = same(scenario)
    assert kind == "TypeError" and msg.startswith("cannot assign '_nn_twins.make.<locals>.Lin' as parameter")


def test_child_module_slot_accepts_only_modules_or_none() -> None:
    def scenario(ns):
        s = ns.nn.Sequential(ns.Act())
        s[0] = None
        r = repr(s)
        setattr(s, "0", 3)
        return r

    assert same(scenario) == (
        "TypeError",
        "cannot assign 'int' as child module '0' (mininn.nn.Module or None expected)",
    )

    def none_repr(ns):
        s = ns.nn.Sequential(ns.Act(), ns.Act())
        setattr(s, "0", None)
        return repr(s), len(list(s.children()))

    assert same(none_repr) == ("ok", ("Sequential(\n  (0): None\n  (1): Act()\n)", 1))


def test_buffer_assignment_rules() -> None:
    def scenario(ns):
        m = ns.nn.Module()
        m.register_buffer("running_mean", ns.T(arr(2)))
        m.register_buffer("tmp", ns.T(arr(2)), persistent=False)
        m.tmp = ns.T(arr(3))  # keeps non-persistent
        m.running_mean = None  # keeps the slot
        m.plain = ns.T(arr(2))  # a plain tensor is NOT a buffer
        m.marked = ns.nn.Buffer(ns.T(arr(2)), persistent=False)
        return (
            list(m._buffers),
            sorted(m._non_persistent_buffers_set),
            "plain" in m.__dict__,
            list(m.state_dict()),
        )

    assert same(scenario) == ("ok", (["running_mean", "tmp", "marked"], ["marked", "tmp"], True, []))

    def bad(ns):
        m = ns.nn.Module()
        m.register_buffer("running_mean", ns.T(arr(2)))
        m.running_mean = 1

    assert same(bad) == (
        "TypeError",
        "cannot assign 'int' as buffer 'running_mean' (mininn.nn.Buffer, mininn.Tensor or None expected)",
    )


def test_buffer_object_keeps_identity_and_shares_data() -> None:
    data = mininn.tensor(arr(2))
    b = nn.Buffer(data)
    m = nn.Module()
    m.b = b
    assert m.b is b and isinstance(b, mininn.Tensor)
    assert b.data_ptr() == data.data_ptr()


def test_unknown_attribute_raises_attribute_error_naming_class() -> None:
    def scenario(ns):
        class Net(ns.nn.Module):
            pass

        return Net().x

    assert same(scenario) == ("AttributeError", "'Net' object has no attribute 'x'")


def test_property_raising_attribute_error_is_masked_like_torch() -> None:
    def scenario(ns):
        class P(ns.nn.Module):
            @property
            def foo(self):
                return self.missing

        return P().foo

    assert same(scenario) == ("AttributeError", "'P' object has no attribute 'foo'")


def test_delattr_removes_from_each_category() -> None:
    def scenario(ns):
        m = ns.Net()
        del m.scale
        del m.tmp
        del m.fc1
        m.plain = 1
        del m.plain
        out = (list(m._parameters), list(m._buffers), sorted(m._non_persistent_buffers_set), list(m._modules))
        del m.nope
        return out

    assert same(scenario) == ("AttributeError", "'Net' object has no attribute 'nope'")

    def ok(ns):
        m = ns.Net()
        del m.scale, m.tmp, m.fc1
        return list(m._parameters), list(m._buffers), sorted(m._non_persistent_buffers_set), list(m._modules)

    same(ok)


def test_dir_lists_children_parameters_and_buffers_but_not_digits() -> None:
    NAMES = ["scale", "zbuf", "tmp", "fc1", "fc2", "bn", "seq", "training", "forward"]

    def scenario(ns):
        m = ns.Net()
        m.seq = ns.nn.Sequential(ns.Act())
        d = dir(m)
        return [k for k in NAMES if k in d]

    assert same(scenario) == ("ok", NAMES)
    seq = nn.Sequential(nn.Module())
    assert "0" not in dir(seq) and dir(seq) == sorted(dir(seq))
    own = set(dir(nn.Module())) - set(dir(nn.Module))
    assert own == set(nn.Module().__dict__)


# ---- registration validation ----------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        "buffer_int_name",
        "buffer_dot",
        "buffer_empty",
        "buffer_exists_method",
        "buffer_exists_param",
        "buffer_bad_value",
        "param_int_name",
        "param_dot",
        "param_empty",
        "param_exists",
        "param_plain_tensor",
        "param_non_leaf",
        "module_not_module",
        "module_int_name",
        "module_exists",
        "module_dot",
        "module_empty",
        "module_int_and_not_module",
        "module_dot_and_exists",
        "buffer_dot_and_bad_value",
    ],
)
def test_registration_errors_match_torch(call: str) -> None:
    def scenario(ns):
        m = ns.Lin(2, 3)
        t = ns.T(arr(2))
        calls = {
            "buffer_int_name": lambda: m.register_buffer(1, t),
            "buffer_dot": lambda: m.register_buffer("a.b", t),
            "buffer_empty": lambda: m.register_buffer("", t),
            "buffer_exists_method": lambda: m.register_buffer("forward", t),
            "buffer_exists_param": lambda: m.register_buffer("weight", t),
            "buffer_bad_value": lambda: m.register_buffer("bb", 1),
            "param_int_name": lambda: m.register_parameter(1, None),
            "param_dot": lambda: m.register_parameter("a.b", None),
            "param_empty": lambda: m.register_parameter("", None),
            "param_exists": lambda: m.register_parameter("training", None),
            "param_plain_tensor": lambda: m.register_parameter("p", t),
            "param_non_leaf": lambda: m.register_parameter("p", ns.nn.Parameter(ns.T(arr(2))) * 2),
            "module_not_module": lambda: m.add_module("x", 1),
            "module_int_name": lambda: m.add_module(1, ns.nn.Module()),
            "module_exists": lambda: m.add_module("training", ns.nn.Module()),
            "module_dot": lambda: m.add_module("a.b", ns.nn.Module()),
            "module_empty": lambda: m.add_module("", ns.nn.Module()),
            "module_int_and_not_module": lambda: m.add_module(1, 1),
            "module_dot_and_exists": lambda: m.register_module("weight", ns.nn.Module()),
            "buffer_dot_and_bad_value": lambda: m.register_buffer("a.b", 1),
        }
        calls[call]()

    kind, _msg = same(scenario)
    assert kind != "ok"


def test_non_leaf_parameter_is_rejected_with_torch_message() -> None:
    # A mininn Parameter is a leaf by construction; give one a grad_fn by hand.
    p = nn.Parameter(mininn.tensor(arr(2)))
    p.grad_fn = (mininn.tensor(arr(2), requires_grad=True) * 2).grad_fn
    with pytest.raises(ValueError) as e:
        nn.Module().register_parameter("p", p)
    assert e.value.args[0] == (
        "Cannot assign non-leaf Tensor to parameter 'p'. Model parameters must be created "
        "explicitly. To express 'p' as a function of another Tensor, compute the value in the "
        "forward() method."
    )


def test_reregistering_buffer_updates_persistence() -> None:
    def scenario(ns):
        m = ns.nn.Module()
        m.register_buffer("b", ns.T(arr(2)), persistent=False)
        m.register_buffer("b", ns.T(arr(2)))
        return list(m.state_dict()), sorted(m._non_persistent_buffers_set)

    assert same(scenario) == ("ok", (["b"], []))


def test_register_none_buffer_and_add_none_module() -> None:
    def scenario(ns):
        m = ns.nn.Module()
        m.register_buffer("b", None)
        m.add_module("c", None)
        return m.b, m.c, list(m.buffers()), list(m.children()), list(m.state_dict()), repr(m)

    assert same(scenario) == ("ok", (None, None, [], [], [], "Module(\n  (c): None\n)"))


def test_registration_hooks_can_replace_values() -> None:
    def scenario(ns):
        seen = []
        mm = ns.nn.modules.module
        replacement = ns.Act()

        def on_module(module, name, value):
            seen.append(("m", name))
            return replacement if name == "swap" else None

        def on_param(module, name, value):
            seen.append(("p", name))

        def on_buffer(module, name, value):
            seen.append(("b", name))

        handles = [
            mm.register_module_module_registration_hook(on_module),
            mm.register_module_parameter_registration_hook(on_param),
            mm.register_module_buffer_registration_hook(on_buffer),
        ]
        try:
            m = ns.Lin(1, 1)
            m.swap = ns.nn.Module()
            m.register_buffer("rb", None)
            return seen, m.swap is replacement
        finally:
            for h in handles:
                h.remove()

    assert same(scenario) == ("ok", ([("p", "weight"), ("p", "bias"), ("m", "swap"), ("b", "rb")], True))


# ---- dotted paths -----------------------------------------------------------------------------


def _path_model(ns):
    class A(ns.nn.Module):
        def __init__(self):
            super().__init__()
            self.net_b = ns.nn.Sequential(ns.Lin(2, 2), ns.Norm(2))
            self.x = 3
            self.register_buffer("buf", ns.T(arr(2)))

    return A()


@pytest.mark.parametrize(
    "expr",
    [
        "m.get_submodule('') is m",
        "type(m.get_submodule('net_b.1')).__name__",
        "m.get_submodule('net_b.5')",
        "m.get_submodule('nope')",
        "m.get_submodule('x')",
        "m.get_submodule('net_b.0.weight')",
        "m.get_parameter('net_b.0.weight').shape == (2, 2)",
        "m.get_parameter('buf')",
        "m.get_parameter('net_b.0.nope')",
        "m.get_parameter('net_b.7.weight')",
        "m.get_buffer('net_b.1.running_mean').shape == (2,)",
        "m.get_buffer('net_b.0.weight')",
        "m.get_buffer('net_b.0.nope')",
        "m.get_buffer('buf') is m.buf",
        "m.set_submodule('', ns.Act())",
        "m.set_submodule('net_b.0', 3)",
        "m.set_submodule('net_b.zz', ns.Act(), strict=True)",
        "m.set_submodule('x', ns.Act())",
        "m.set_submodule('net_b.zz', ns.Act()) or list(m.net_b._modules)",
        "m.set_submodule('net_b.0', ns.Act()) or repr(m.net_b)",
    ],
)
def test_path_lookups_match_torch(expr: str) -> None:
    def scenario(ns):
        m = _path_model(ns)
        return eval(expr, {"m": m, "ns": ns})

    same(scenario)


# ---- traversal --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expr",
    [
        "[k for k, _ in m.named_parameters()]",
        "[k for k, _ in m.named_buffers()]",
        "[k for k, _ in m.named_modules()]",
        "[k for k, _ in m.named_children()]",
        "[k for k, _ in m.named_modules(prefix='root')]",
        "[k for k, _ in m.named_parameters(prefix='m')]",
        "[k for k, _ in m.named_parameters(recurse=False)]",
        "[k for k, _ in m.named_buffers(prefix='x', recurse=False)]",
        "[type(c).__name__ for c in m.children()]",
        "[type(c).__name__ for c in m.modules()]",
        "[tuple(p.shape) for p in m.parameters()]",
        "[tuple(b.shape) for b in m.buffers(recurse=False)]",
    ],
)
def test_traversal_order_and_prefixes_match_torch(expr: str) -> None:
    same(lambda ns: eval(expr, {"m": ns.Net()}))


@pytest.mark.parametrize(
    "expr",
    [
        "[k for k, _ in m.named_parameters()]",
        "[k for k, _ in m.named_parameters(remove_duplicate=False)]",
        "[k for k, _ in m.named_modules()]",
        "[k for k, _ in m.named_modules(remove_duplicate=False)]",
        "[k for k, _ in m.named_children()]",
        "list(m.state_dict())",
        "len(list(m.parameters()))",
        "len(list(m.modules(remove_duplicate=False)))",
        "repr(m)",
    ],
)
def test_shared_modules_and_tied_weights_are_deduplicated_like_torch(expr: str) -> None:
    same(lambda ns: eval(expr, {"m": ns.Tied()}))


def test_named_modules_memo_skips_whole_subtree() -> None:
    def scenario(ns):
        m = ns.Net()
        return [k for k, _ in m.named_modules(memo={m.bn})]

    assert same(scenario) == ("ok", ["", "fc2", "fc1"])


def test_shared_buffer_appears_once() -> None:
    def scenario(ns):
        m = ns.nn.Module()
        b = ns.T(arr(2))
        m.a = ns.nn.Module()
        m.c = ns.nn.Module()
        m.a.register_buffer("x", b)
        m.c.register_buffer("y", b)
        return [k for k, _ in m.named_buffers()], [k for k, _ in m.named_buffers(remove_duplicate=False)]

    assert same(scenario) == ("ok", (["a.x"], ["a.x", "c.y"]))


# ---- modes and gradients ----------------------------------------------------------------------


def test_train_eval_recurse_and_validate_mode() -> None:
    def scenario(ns):
        m = ns.Net()
        r = m.eval()
        modes = [x.training for x in m.modules()]
        m.train()
        return r is m, modes, [x.training for x in m.modules()]

    same(scenario)
    assert same(lambda ns: ns.Net().train(1)) == ("ValueError", "training mode is expected to be boolean")
    assert same(lambda ns: ns.Net().train("no"))[0] == "ValueError"


def test_requires_grad_and_zero_grad() -> None:
    def scenario(ns):
        m = ns.Lin(2, 2)
        r = m.requires_grad_(False)
        flags = [p.requires_grad for p in m.parameters()]
        m.requires_grad_()
        m(ns.T(arr(1, 2))).sum().backward()
        had = [p.grad is not None for p in m.parameters()]
        out = m.zero_grad(set_to_none=False)
        zeros = [float(np.abs(to_np(p.grad)).sum()) for p in m.parameters()]
        m.zero_grad()
        return r is m, flags, had, out, zeros, [p.grad for p in m.parameters()]

    assert same(scenario) == ("ok", (True, [False, False], [True, True], None, [0.0, 0.0], [None, None]))


def test_apply_is_post_order_and_returns_self() -> None:
    def scenario(ns):
        seen = []
        m = ns.nn.Sequential(ns.Lin(1, 1), ns.nn.Sequential(ns.Norm(1), ns.Act()))
        r = m.apply(lambda x: seen.append(type(x).__name__))
        return r is m, seen

    assert same(scenario) == ("ok", (True, ["Lin", "Norm", "Act", "Sequential", "Sequential"]))


# ---- conversion -------------------------------------------------------------------------------


def _dtypes(m):
    return {k: str(v.dtype).split(".")[-1] for k, v in m.state_dict().items()}


@pytest.mark.parametrize(
    "call",
    ["double()", "half()", "float()", "to(dtype=L.float64)", "to(L.float16)", "type(L.float64)", "to('cpu')"],
)
def test_conversions_cast_like_torch_and_keep_parameter_identity(call: str) -> None:
    def scenario(ns):
        m = ns.Net()
        m(ns.T(arr(2, 4))).sum().backward()
        params = list(m.parameters())
        r = eval("m." + call, {"m": m, "L": ns.lib})
        same_objects = all(a is b for a, b in zip(params, m.parameters()))
        grads = sorted({str(p.grad.dtype).split(".")[-1] for p in m.parameters()})
        return r is m, same_objects, _dtypes(m), grads, str(m.tmp.dtype).split(".")[-1]

    same(scenario)


def test_to_tensor_takes_its_dtype() -> None:
    same(lambda ns: _dtypes(ns.Net().to(ns.T(arr(1, dtype=np.float64)))))


def test_to_rejects_integer_dtype() -> None:
    assert same(lambda ns: ns.Net().to(ns.lib.int32)) == (
        "TypeError",
        "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=mininn.int32",
    )


def test_optimizer_built_before_conversion_still_updates_the_module() -> None:
    m = MININN.Lin(2, 2)
    opt = mininn.optim.SGD(m.parameters(), lr=0.1) if hasattr(mininn, "optim") else None
    m.double()
    m(mininn.tensor(arr(1, 2, dtype=np.float64))).sum().backward()
    if opt is not None:
        before = to_np(m.weight).copy()
        opt.step()
        assert not np.allclose(before, to_np(m.weight))
    assert m.weight.grad.dtype == mininn.float64


def test_to_empty_and_cpu_and_share_memory_return_self() -> None:
    m = MININN.Net()
    assert m.cpu() is m and m.share_memory() is m
    w = m.fc1.weight
    assert m.to_empty(device="cpu") is m and m.fc1.weight is w and m.fc1.weight.shape == (3, 4)


def test_compile_is_accepted_and_does_nothing() -> None:
    m = MININN.Act()
    assert m.compile() is None
    assert to_np(m(mininn.tensor(arr(2)))).tolist() == pytest.approx([0.0, 0.2])


# ---- repr -------------------------------------------------------------------------------------


def test_repr_matches_torch_character_for_character() -> None:
    def scenario(ns):
        class Block(ns.nn.Module):
            def __init__(self):
                super().__init__()
                self.attn = ns.Lin(2, 2)
                self.mlp = ns.nn.Sequential(ns.Lin(2, 4), ns.Act(), ns.Lin(4, 2))

        class Top(ns.nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = ns.nn.ModuleList([Block(), Block(), ns.Act()])
                self.norm = ns.Norm(2)
                self.empty = ns.nn.ModuleList()
                self.none = None
                self.add_module("gone", None)

            def extra_repr(self):
                return "depth=2,\nwidth=8"

        return repr(Top())

    out = same(scenario)[1]
    assert "(0-1): 2 x Block(" in out and "  depth=2,\n  width=8\n  (blocks)" in out


def test_repr_single_extra_line_and_empty_lines() -> None:
    def scenario(ns):
        class E(ns.nn.Module):
            def __init__(self, text):
                super().__init__()
                self.text = text

            def extra_repr(self):
                return self.text

        s = ns.nn.Sequential(E("a=1"), E("a\n\nb"), E(""))
        return repr(s), repr(E("x")), repr(E(""))

    same(scenario)


# ---- copying and pickling ---------------------------------------------------------------------


def test_deepcopy_gives_independent_equal_module() -> None:
    m = MININN.Net()
    m.fc1.register_forward_hook(lambda *a: None)
    c = copy.deepcopy(m)
    assert repr(c) == repr(m)
    assert list(c.state_dict()) == list(m.state_dict())
    assert c.fc1.weight is not m.fc1.weight and type(c.fc1.weight) is nn.Parameter
    np.testing.assert_array_equal(to_np(c.fc1.weight), to_np(m.fc1.weight))
    c.fc1.weight.data = mininn.zeros(3, 4)
    assert not np.allclose(to_np(m.fc1.weight), 0)
    assert len(c.fc1._forward_hooks) == 1
    assert c.tmp is not m.tmp and sorted(c._non_persistent_buffers_set) == ["tmp"]


def test_deepcopy_after_backward_does_not_share_gradient_accumulation() -> None:
    m = MININN.Lin(2, 2)
    m(mininn.tensor(arr(1, 2))).sum().backward()
    c = copy.deepcopy(m)
    c.zero_grad()
    c(mininn.tensor(arr(1, 2))).sum().backward()
    assert c.weight.grad is not None
    np.testing.assert_allclose(to_np(m.weight.grad), to_np(c.weight.grad))


class PickleNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Sequential(nn.Module())
        self.scale = nn.Parameter(mininn.tensor(arr(3)))
        self.register_buffer("count", mininn.tensor(np.array(4, np.int64)))
        self.register_buffer("tmp", mininn.tensor(arr(1)), persistent=False)

    def forward(self, x):
        return x * self.scale


def test_pickle_round_trip_keeps_structure_and_values() -> None:
    m = PickleNet()
    m.eval()
    m2 = pickle.loads(pickle.dumps(m))
    assert repr(m2) == repr(m) and m2.training is False
    for (k1, v1), (k2, v2) in zip(m.state_dict().items(), m2.state_dict().items()):
        assert k1 == k2
        np.testing.assert_array_equal(to_np(v1), to_np(v2))
    assert isinstance(m2.scale, nn.Parameter) and m2.scale.requires_grad
    assert sorted(m2._non_persistent_buffers_set) == ["tmp"]
    assert m2.count.dtype == mininn.int64


def test_setstate_fills_hook_dicts_missing_from_old_pickles() -> None:
    m = MININN.Act()
    state = m.__getstate__()
    old_missing = ("_forward_pre_hooks", "_state_dict_pre_hooks", "_non_persistent_buffers_set")
    for key in (*old_missing, "_is_full_backward_hook"):
        del state[key]
    fresh = MININN.Act.__new__(MININN.Act)
    fresh.__setstate__(state)
    assert fresh._forward_pre_hooks == {} and fresh._non_persistent_buffers_set == set()
    assert fresh._is_full_backward_hook is None
    assert to_np(fresh(mininn.tensor(arr(1)))).tolist() == [0.0]


def test_exception_outcome_helper_reports_type_and_message() -> None:
    # guards the differential helper itself: a mismatch must be visible
    assert outcome(lambda ns: ns.nn.Module()(1), TORCH)[0] == "NotImplementedError"
    assert norm(("x", "torch.Size([1])", "https://pytorch.org/torch")) == (
        "x",
        "mininn.Size([1])",
        "https://pytorch.org/torch",
    )
