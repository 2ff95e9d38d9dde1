"""What a loaded module holds: its parameters and buffers, and its module tree.

Both views walk the module the way torch does (``named_parameters``,
``named_buffers``, ``named_modules``), so names match the state-dict keys.
Statistics are computed in float64 over the finite values of each tensor.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from app.v2.datatypes import v2_datatype

__all__ = ["module_tree", "parameter_table"]


def parameter_table(module: Any, *, stats: bool = False, bins: int = 20) -> dict[str, Any]:
    """Every named parameter and buffer of ``module``, with totals.

    Args:
        module: a mininn ``nn.Module``.
        stats: add mean, std, min, max, L2 norm and a histogram per tensor.
        bins: histogram bins when ``stats`` is true.

    Returns:
        ``{"parameters": [...], "buffers": [...], "totals": {...}}``; each entry has
        ``name``, ``shape``, ``datatype``, ``dtype``, ``device``, ``numel``,
        ``requires_grad`` and ``persistent``.
    """
    state_keys = set(module.state_dict().keys())
    parameters = [_entry(n, t, True, stats, bins) for n, t in module.named_parameters()]
    buffers = [_entry(n, t, n in state_keys, stats, bins) for n, t in module.named_buffers()]
    return {"parameters": parameters, "buffers": buffers, "totals": _totals(parameters, buffers)}


def _entry(name: str, tensor: Any, persistent: bool, stats: bool, bins: int) -> dict[str, Any]:
    array = _host(tensor)
    entry: dict[str, Any] = {
        "name": name,
        "shape": list(array.shape),
        "datatype": v2_datatype(array.dtype),
        "dtype": str(tensor.dtype).removeprefix("mininn."),
        "device": str(tensor.device),
        "numel": int(array.size),
        "bytes": int(array.nbytes),
        "requires_grad": bool(tensor.requires_grad),
        "persistent": persistent,
    }
    if stats:
        entry["stats"] = tensor_stats(array, bins)
    return entry


def _host(tensor: Any) -> np.ndarray:
    return np.asarray(tensor.detach().cpu().numpy())


def tensor_stats(array: np.ndarray, bins: int = 20) -> dict[str, Any] | None:
    """Mean, std, min, max, L2 norm and histogram of the finite values (None when empty).

    ``nonfinite`` counts NaN and infinite values, which the other numbers leave out.
    """
    values = array.astype(np.float64, copy=False).reshape(-1)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None if values.size == 0 else {"nonfinite": int(values.size)}
    counts, edges = np.histogram(finite, bins=bins)
    return {
        "mean": float(finite.mean()),
        "std": float(finite.std()),
        "min": float(finite.min()),
        "max": float(finite.max()),
        "l2_norm": float(np.sqrt(np.dot(finite, finite))),
        "nonfinite": int(values.size - finite.size),
        "histogram": {"bins": bins, "edges": edges.tolist(), "counts": counts.tolist()},
    }


def _totals(parameters: list[dict[str, Any]], buffers: list[dict[str, Any]]) -> dict[str, int]:
    return {
        "parameters": len(parameters),
        "parameter_elements": sum(p["numel"] for p in parameters),
        "trainable_elements": sum(p["numel"] for p in parameters if p["requires_grad"]),
        "parameter_bytes": sum(p["bytes"] for p in parameters),
        "buffers": len(buffers),
        "buffer_elements": sum(b["numel"] for b in buffers),
        "persistent_buffer_elements": sum(b["numel"] for b in buffers if b["persistent"]),
        "buffer_bytes": sum(b["bytes"] for b in buffers),
    }


def module_tree(module: Any) -> dict[str, Any]:
    """The module tree as ``named_modules()`` walks it.

    Each node: ``name`` (``""`` for the root), ``type``, ``extra_repr``,
    ``training``, ``parameters`` (own elements), ``total_parameters`` (own and
    descendants', shared tensors counted once) and ``children``.
    """
    nodes: dict[str, dict[str, Any]] = {}
    root: dict[str, Any] | None = None
    for name, submodule in module.named_modules():
        node = _node(name, submodule)
        nodes[name] = node
        if root is None:
            root = node
        else:
            nodes[_parent(name, nodes)]["children"].append(node)
    assert root is not None  # named_modules always yields the module itself first
    return root


def _node(name: str, module: Any) -> dict[str, Any]:
    own = sum(p.numel() for _, p in module.named_parameters(recurse=False))
    return {
        "name": name,
        "type": module._get_name(),
        "extra_repr": module.extra_repr(),
        "training": bool(module.training),
        "parameters": int(own),
        "total_parameters": int(sum(p.numel() for p in module.parameters())),
        "children": [],
    }


def _parent(name: str, nodes: dict[str, dict[str, Any]]) -> str:
    prefix = name
    while "." in prefix:
        prefix = prefix.rsplit(".", 1)[0]
        if prefix in nodes:
            return prefix
    return ""
