"""state_dict / load_state_dict of mininn.nn.Module against torch 2.13: key order,
metadata, hooks, error reports, identity-preserving copies, assign, extra state,
version migration, and mininn's all-or-nothing loading."""

from __future__ import annotations

import warnings
from collections import OrderedDict

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _nn_twins import MININN, TORCH, arr, same, to_np  # noqa: E402

import mininn  # noqa: E402
from mininn import nn  # noqa: E402


def _snapshot(m) -> dict:
    return {k: to_np(v).copy() for k, v in m.state_dict().items()}


def _assert_unchanged(before: dict, m) -> None:
    after = _snapshot(m)
    assert list(after) == list(before)
    for k in before:
        np.testing.assert_array_equal(before[k], after[k])
        assert before[k].dtype == after[k].dtype


# ---- state_dict -------------------------------------------------------------------------------


def test_state_dict_key_order_own_params_then_buffers_then_children() -> None:
    assert same(lambda ns: list(ns.Net().state_dict())) == (
        "ok",
        [
            "scale",
            "zbuf",
            "fc2.weight",
            "fc2.bias",
            "bn.weight",
            "bn.bias",
            "bn.running_mean",
            "bn.running_var",
            "bn.num_batches_tracked",
            "fc1.weight",
            "fc1.bias",
        ],
    )


@pytest.mark.parametrize("prefix", ["", "model."])
def test_state_dict_metadata_has_each_module_version(prefix: str) -> None:
    def scenario(ns):
        sd = ns.Net().state_dict(prefix=prefix)
        return list(sd), [(k, dict(v)) for k, v in sd._metadata.items()], list(dict(sd))

    same(scenario)


def test_state_dict_values_are_detached_and_share_memory() -> None:
    def scenario(ns):
        m = ns.Net()
        sd = m.state_dict()
        w = sd["fc1.weight"]
        kinds = (type(w).__name__, w.requires_grad, type(m.state_dict(keep_vars=True)["fc1.weight"]).__name__)
        with ns.lib.no_grad():
            m.fc1.weight.mul_(0)
        return kinds, float(to_np(w).sum())

    assert same(scenario) == ("ok", (("Tensor", False, "Parameter"), 0.0))


def test_state_dict_keep_vars_returns_the_parameter_objects() -> None:
    m = MININN.Net()
    sd = m.state_dict(keep_vars=True)
    assert sd["fc1.weight"] is m.fc1.weight and sd["zbuf"] is m.zbuf


def test_state_dict_destination_and_positional_args_warn() -> None:
    def scenario(ns):
        dest = OrderedDict()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = ns.Lin(1, 1).state_dict(dest, "p.")
        return out is dest, list(dest), [(x.category.__name__, str(x.message)) for x in w]

    same(scenario)


def test_state_dict_hooks() -> None:
    def scenario(ns):
        trace = []
        m = ns.Net()

        def pre(module, prefix, keep_vars):
            trace.append(("pre", type(module).__name__, prefix, keep_vars))

        def post(module, sd, prefix, local_metadata):
            trace.append(("post", type(module).__name__, prefix, dict(local_metadata), len(sd)))
            sd[prefix + "added"] = ns.T(arr(1))

        m.register_state_dict_pre_hook(pre)
        m.bn.register_state_dict_pre_hook(pre)
        m.bn.register_state_dict_post_hook(post)
        h = m.register_state_dict_post_hook(post)
        keys = list(m.state_dict())
        h.remove()
        return trace, keys, list(m.state_dict())[-1]

    same(scenario)


def test_state_dict_post_hook_must_return_none_and_private_hook_may_replace() -> None:
    def scenario(ns):
        m = ns.Lin(1, 1)
        m.register_state_dict_post_hook(lambda *a: {"x": 1})
        m.state_dict()

    assert same(scenario) == ("RuntimeError", "state_dict post-hook must return None")

    def private(ns):
        m = ns.Lin(1, 1)
        m._register_state_dict_hook(lambda *a: {"x": 1})
        return m.state_dict()

    assert same(private) == ("ok", {"x": 1})

    def both(ns):
        def hook(*a):
            return None

        m = ns.Lin(1, 1)
        m.register_state_dict_post_hook(hook)
        m._register_state_dict_hook(hook)

    same(both)


def test_extra_state_is_saved_and_restored() -> None:
    def scenario(ns):
        class E(ns.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = ns.Lin(1, 1)
                self.state = {"step": 1}

            def get_extra_state(self):
                return dict(self.state)

            def set_extra_state(self, state):
                self.state = state

        m = ns.nn.Sequential(E())
        sd = m.state_dict()
        sd["0._extra_state"] = {"step": 7}
        r = m.load_state_dict(sd)
        missing = m.load_state_dict({k: v for k, v in sd.items() if "extra" not in k}, strict=False)
        return list(sd), repr(r), m[0].state, list(missing.missing_keys)

    assert same(scenario)[1][2] == {"step": 7}


def test_extra_state_key_is_unexpected_without_set_extra_state() -> None:
    def scenario(ns):
        m = ns.Lin(1, 1)
        sd = m.state_dict()
        sd["_extra_state"] = 1
        return m.load_state_dict(sd, strict=False).unexpected_keys, m.load_state_dict(sd)

    same(scenario)


# ---- load_state_dict: reports ------------------------------------------------------------------


def test_round_trip_reports_all_keys_matched() -> None:
    def scenario(ns):
        m = ns.Net()
        r = m.load_state_dict(m.state_dict())
        return repr(r), str(r), isinstance(r, tuple), r.missing_keys, r.unexpected_keys

    assert same(scenario) == ("ok", ("<All keys matched successfully>",) * 2 + (True, [], []))


def test_error_report_lists_missing_then_unexpected_then_size_mismatches() -> None:
    def scenario(ns):
        m = ns.Net()
        sd = m.state_dict()
        del sd["fc1.bias"]
        sd["fc1.weightx"] = ns.T(arr(1))
        sd["extra.w"] = ns.T(arr(1))
        sd["fc1.weight"] = ns.T(arr(5, 4))
        sd["bn.running_var"] = [1.0, 2.0]
        m.load_state_dict(sd)

    kind, msg = same(scenario)
    assert kind == "RuntimeError"
    head = 'Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "fc1.bias". \n\t'
    assert msg.startswith(head)
    assert "copying a param with shape mininn.Size([5, 4]) from checkpoint" in msg


def test_non_strict_load_returns_keys_but_still_raises_on_size_mismatch() -> None:
    def scenario(ns):
        m = ns.Net()
        sd = m.state_dict()
        del sd["scale"]
        sd["zz"] = ns.T(arr(1))
        r = m.load_state_dict(sd, strict=False)
        sd["fc2.weight"] = ns.T(arr(9))
        try:
            m.load_state_dict(sd, strict=False)
        except RuntimeError as e:
            return repr(r), e.args[0]

    same(scenario)


def test_load_requires_a_mapping() -> None:
    assert same(lambda ns: ns.Lin(1, 1).load_state_dict([1])) == (
        "TypeError",
        "Expected state_dict to be dict-like, got <class 'list'>.",
    )


def test_none_parameter_key_in_checkpoint_is_unexpected() -> None:
    def scenario(ns):
        m = ns.Lin(2, 2, bias=False)
        return repr(m.load_state_dict({"weight": ns.T(arr(2, 2)), "bias": ns.T(arr(2))}, strict=False))

    assert same(scenario) == ("ok", "_IncompatibleKeys(missing_keys=[], unexpected_keys=['bias'])")


def test_non_persistent_buffer_is_neither_saved_nor_expected() -> None:
    def scenario(ns):
        m = ns.Net()
        sd = m.state_dict()
        r1 = repr(m.load_state_dict(sd))
        sd["tmp"] = ns.T(arr(1))
        return r1, repr(m.load_state_dict(sd, strict=False))

    same(scenario)


# ---- load_state_dict: values -------------------------------------------------------------------


def test_load_copies_in_place_casting_to_model_dtype() -> None:
    def scenario(ns):
        m = ns.Net()
        params = list(m.parameters())
        sd = {k: ns.T(to_np(v).astype(np.float64) + 1) for k, v in m.state_dict().items()}
        sd["bn.num_batches_tracked"] = ns.T(np.array(7.0))
        m.load_state_dict(sd)
        return (
            all(a is b for a, b in zip(params, m.parameters())),
            {k: (str(v.dtype).split(".")[-1], to_np(v).round(4).tolist()) for k, v in m.state_dict().items()},
            m.training,
        )

    same(scenario)


def test_load_into_0d_buffer_from_shape_1_checkpoint() -> None:
    def scenario(ns):
        m = ns.Norm(2)
        sd = m.state_dict()
        sd["num_batches_tracked"] = ns.T(np.array([5], np.int64))
        m.load_state_dict(sd)
        return int(m.num_batches_tracked), tuple(m.num_batches_tracked.shape)

    assert same(scenario) == ("ok", (5, ()))


def test_optimizer_built_before_load_keeps_working() -> None:
    m = MININN.Lin(2, 2)
    params = list(m.parameters())
    other = MININN.Lin(2, 2, start=3.0)
    m.load_state_dict(other.state_dict())
    assert all(a is b for a, b in zip(params, m.parameters()))
    np.testing.assert_array_equal(to_np(params[0]), to_np(other.weight))
    m(mininn.tensor(arr(1, 2))).sum().backward()
    assert params[0].grad is not None


def test_assign_replaces_tensors_keeping_requires_grad() -> None:
    def scenario(ns):
        m = ns.Net()
        m.fc1.bias.requires_grad_(False)
        old = m.fc1.weight
        sd = {k: ns.T(to_np(v).astype(np.float64)) for k, v in m.state_dict().items()}
        m.load_state_dict(sd, assign=True)
        return (
            m.fc1.weight is old,
            type(m.fc1.weight).__name__,
            str(m.fc1.weight.dtype).split(".")[-1],
            m.fc1.weight.requires_grad,
            m.fc1.bias.requires_grad,
            str(m.zbuf.dtype).split(".")[-1],
            type(m.zbuf).__name__,
            sorted(m._non_persistent_buffers_set),
        )

    expected = (False, "Parameter", "float64", True, False, "float64", "Tensor", ["tmp"])
    assert same(scenario) == ("ok", expected)


def test_numpy_arrays_are_accepted_as_values() -> None:
    m = MININN.Net()
    sd = {k: to_np(v) + 1 for k, v in m.state_dict().items()}
    assert repr(m.load_state_dict(sd)) == "<All keys matched successfully>"
    np.testing.assert_array_equal(to_np(m.fc1.weight), sd["fc1.weight"])
    m.load_state_dict({k: v * 2 for k, v in sd.items()}, assign=True)
    assert isinstance(m.fc1.weight, nn.Parameter) and m.fc1.weight.requires_grad


def test_read_only_storage_is_replaced_not_written() -> None:
    m = MININN.Lin(2, 2)
    ro = np.zeros((2, 2), np.float32)
    ro.flags.writeable = False
    m.weight.data = mininn.from_numpy(ro)  # e.g. storage mapped from a checkpoint file
    w = m.weight
    assert np.shares_memory(w.detach().numpy(), ro)
    m.load_state_dict({"weight": np.ones((2, 2), np.float32), "bias": np.ones(2, np.float32)})
    assert m.weight is w and to_np(w).tolist() == [[1, 1], [1, 1]] and not ro.any()


# ---- load_state_dict: all or nothing (beyond torch) ---------------------------------------------


@pytest.mark.parametrize("damage", ["size", "missing", "unexpected", "type"])
def test_failed_load_leaves_model_exactly_as_it_was(damage: str) -> None:
    m = MININN.Net()
    before = _snapshot(m)
    sd = {k: mininn.tensor(to_np(v) + 5) for k, v in m.state_dict().items()}
    if damage == "size":
        sd["fc1.bias"] = mininn.zeros(7)  # fc1 comes last: torch would have loaded the rest
    elif damage == "missing":
        del sd["fc1.bias"]
    elif damage == "unexpected":
        sd["fc1.nope"] = mininn.zeros(1)
    else:
        sd["fc1.bias"] = "not a tensor"
    with pytest.raises(RuntimeError, match="Error\\(s\\) in loading state_dict for Net"):
        m.load_state_dict(sd)
    _assert_unchanged(before, m)


def test_torch_would_leave_a_half_loaded_model_in_the_same_case() -> None:
    # documents the difference that the previous test guards
    m = TORCH.Net()
    sd = {k: v + 5 for k, v in m.state_dict().items()}
    sd["fc1.bias"] = torch.zeros(7)
    with pytest.raises(RuntimeError):
        m.load_state_dict(sd)
    assert float(m.scale.detach()) == 6.0


def test_failed_post_hook_check_rolls_back_copies() -> None:
    m = MININN.Net()
    before = _snapshot(m)
    m.bn.register_load_state_dict_post_hook(lambda mod, keys: keys.missing_keys.append("ghost"))
    sd = {k: v + 1 for k, v in m.state_dict().items()}
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "ghost"'):
        m.load_state_dict(sd)
    _assert_unchanged(before, m)
    r = m.load_state_dict(sd, strict=False)
    assert r.missing_keys == ["ghost"]
    np.testing.assert_array_equal(to_np(m.scale), before["scale"] + 1)


def test_assign_failure_restores_original_objects() -> None:
    m = MININN.Lin(2, 2)
    w = m.weight
    m.register_load_state_dict_post_hook(lambda mod, keys: keys.unexpected_keys.append("x"))
    with pytest.raises(RuntimeError):
        sd = {"weight": np.ones((2, 2), np.float32), "bias": np.ones(2, np.float32)}
        m.load_state_dict(sd, assign=True)
    assert m.weight is w


def test_load_from_state_dict_called_directly_copies_at_once() -> None:
    m = MININN.Lin(2, 2)
    missing, unexpected, errors = [], [], []
    m._load_from_state_dict(
        {"p.weight": np.ones((2, 2), np.float32)}, "p.", {}, True, missing, unexpected, errors
    )
    assert to_np(m.weight).tolist() == [[1, 1], [1, 1]]
    assert missing == ["p.bias"] and unexpected == [] and errors == []


# ---- load hooks and versions -------------------------------------------------------------------


def test_load_pre_hooks_see_strict_true_and_can_rename_keys() -> None:
    def scenario(ns):
        trace = []
        m = ns.Net()

        def pre(module, sd, prefix, local_metadata, strict, missing, unexpected, errors):
            trace.append((type(module).__name__, prefix, strict, sorted(sd)[:2], dict(local_metadata)))
            if prefix + "old_weight" in sd:
                sd[prefix + "weight"] = sd.pop(prefix + "old_weight")

        m.fc1.register_load_state_dict_pre_hook(pre)
        sd = m.state_dict()
        sd["fc1.old_weight"] = sd.pop("fc1.weight")
        r = m.load_state_dict(sd, strict=False)
        return trace, repr(r)

    same(scenario)


def test_load_post_hooks_run_children_first_and_can_clear_keys() -> None:
    def scenario(ns):
        trace = []
        m = ns.Net()

        def post(module, keys):
            trace.append(type(module).__name__)
            keys.unexpected_keys.clear()

        m.register_load_state_dict_post_hook(post)
        m.bn.register_load_state_dict_post_hook(post)
        sd = m.state_dict()
        sd["junk"] = ns.T(arr(1))
        r = m.load_state_dict(sd)
        return trace, repr(r)

    assert same(scenario) == ("ok", (["Norm", "Net"], "<All keys matched successfully>"))


def test_load_post_hook_returning_value_raises() -> None:
    def scenario(ns):
        m = ns.Lin(1, 1)
        m.register_load_state_dict_post_hook(lambda mod, keys: 1)
        m.load_state_dict(m.state_dict())

    assert same(scenario)[0] == "AssertionError"


def test_version_metadata_drives_checkpoint_migration() -> None:
    def scenario(ns):
        class Migrating(ns.Norm):
            def _load_from_state_dict(self, sd, prefix, local_metadata, strict, missing, unexpected, errors):
                version = local_metadata.get("version", None)
                key = prefix + "num_batches_tracked"
                if (version is None or version < 2) and key not in sd:
                    sd[key] = self.num_batches_tracked
                super()._load_from_state_dict(sd, prefix, local_metadata, strict, missing, unexpected, errors)

        m = ns.nn.Sequential(Migrating(2))
        sd = m.state_dict()
        del sd["0.num_batches_tracked"]
        r_meta = None
        try:
            m.load_state_dict(sd)
        except RuntimeError as e:
            r_meta = e.args[0]
        plain = repr(m.load_state_dict(dict(sd)))
        sd._metadata["0"]["version"] = 1
        old = repr(m.load_state_dict(sd))
        return r_meta, plain, old

    out = same(scenario)[1]
    assert out[0].endswith('Missing key(s) in state_dict: "0.num_batches_tracked". ')
    assert out[1] == out[2] == "<All keys matched successfully>"


def test_load_does_not_change_training_mode_or_metadata_dict() -> None:
    m = MININN.Net().eval()
    sd = m.state_dict()
    meta_before = {k: dict(v) for k, v in sd._metadata.items()}
    m.load_state_dict(sd, assign=True)
    assert m.training is False
    assert {k: dict(v) for k, v in sd._metadata.items()} == meta_before
