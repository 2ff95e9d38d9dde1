from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import mininn
from app.runtime.inspection import module_tree, parameter_table, tensor_stats
from mininn import nn

torch = pytest.importorskip("torch")


def build(lib: Any) -> Any:
    """The same small model in mininn or torch: shared weights, buffers of both kinds."""

    class Block(lib.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = lib.nn.Parameter(lib.ones(3))
            self.register_buffer("running", lib.zeros(3))
            self.register_buffer("scratch", lib.ones(2), persistent=False)

    class Net(lib.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.first = Block()
            self.second = Block()
            self.head = lib.nn.ModuleList([Block()])
            self.bias = lib.nn.Parameter(lib.zeros(4))
            self.bias.requires_grad_(False)
            self.shared = self.first  # the same module twice: walked once

    return Net()


def test_parameter_table_matches_torchs_names_and_flags() -> None:
    table = parameter_table(build(mininn))
    reference = build(torch)
    assert [p["name"] for p in table["parameters"]] == [n for n, _ in reference.named_parameters()]
    assert [b["name"] for b in table["buffers"]] == [n for n, _ in reference.named_buffers()]
    state_keys = set(reference.state_dict())
    assert {b["name"]: b["persistent"] for b in table["buffers"]} == {
        n: n in state_keys for n, _ in reference.named_buffers()
    }
    bias = next(p for p in table["parameters"] if p["name"] == "bias")
    assert bias == {
        "name": "bias",
        "shape": [4],
        "datatype": "FP32",
        "dtype": "float32",
        "device": "cpu",
        "numel": 4,
        "bytes": 16,
        "requires_grad": False,
        "persistent": True,
    }


def test_parameter_totals() -> None:
    totals = parameter_table(build(mininn))["totals"]
    assert totals == {
        "parameters": 4,
        "parameter_elements": 3 * 3 + 4,
        "trainable_elements": 9,
        "parameter_bytes": 13 * 4,
        "buffers": 6,
        "buffer_elements": 3 * 5,
        "persistent_buffer_elements": 9,
        "buffer_bytes": 15 * 4,
    }


def test_stats_are_those_numpy_computes() -> None:
    model = nn.Module()
    values = np.array([[1.0, -2.0, 3.5], [0.0, 4.0, -1.5]], dtype=np.float32)
    model.weight = nn.Parameter(mininn.tensor(values))
    entry = parameter_table(model, stats=True, bins=4)["parameters"][0]
    stats = entry["stats"]
    v = values.astype(np.float64)
    assert stats["mean"] == pytest.approx(v.mean())
    assert stats["std"] == pytest.approx(v.std())
    assert (stats["min"], stats["max"]) == (-2.0, 4.0)
    assert stats["l2_norm"] == pytest.approx(np.linalg.norm(v))
    counts, edges = np.histogram(v, bins=4)
    assert stats["histogram"] == {"bins": 4, "edges": edges.tolist(), "counts": counts.tolist()}
    assert stats["nonfinite"] == 0


def test_stats_skip_non_finite_values_and_count_them() -> None:
    stats = tensor_stats(np.array([1.0, np.nan, np.inf, 3.0]), bins=2)
    assert stats is not None
    assert (stats["mean"], stats["nonfinite"], sum(stats["histogram"]["counts"])) == (2.0, 2, 2)
    assert tensor_stats(np.array([np.nan])) == {"nonfinite": 1}
    assert tensor_stats(np.zeros((0, 3))) is None


def test_module_tree_walks_named_modules() -> None:
    tree = module_tree(build(mininn))
    reference = build(torch)

    def names(node: dict[str, Any]) -> list[str]:
        return [node["name"]] + [n for child in node["children"] for n in names(child)]

    assert names(tree) == [n for n, _ in reference.named_modules()]
    assert tree["type"] == "Net" and tree["training"] is True
    assert tree["parameters"] == 4 and tree["total_parameters"] == 13
    first = tree["children"][0]
    assert (first["name"], first["type"], first["parameters"], first["total_parameters"]) == (
        "first",
        "Block",
        3,
        3,
    )
    head = next(c for c in tree["children"] if c["name"] == "head")
    assert [c["name"] for c in head["children"]] == ["head.0"]
    assert head["total_parameters"] == 3 and head["parameters"] == 0


def test_module_tree_shows_extra_repr() -> None:
    class Scaled(nn.Module):
        def extra_repr(self) -> str:
            return "factor=2"

    assert module_tree(Scaled())["extra_repr"] == "factor=2"
