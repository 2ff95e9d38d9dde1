"""``autograd.grad`` (gradients returned instead of accumulated) and ``gradcheck``
(analytical gradients against central finite differences).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mininn._tensor_core import TensorCore
from mininn.autograd.grad_mode import no_grad
from mininn.autograd.graph import _edge, _root_grad, run_backward, wrap

__all__ = ["grad", "gradcheck", "GradcheckError"]


def _as_tuple(x: Any) -> tuple[Any, ...]:
    if isinstance(x, (tuple, list)):
        return tuple(x)
    return (x,)


def grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
    materialize_grads: bool = False,
) -> tuple[Any, ...]:
    """The gradients of ``outputs`` with respect to ``inputs``; no ``.grad`` is touched.

    Args:
        outputs: A tensor or a sequence of tensors to differentiate.
        inputs: The tensors to differentiate against.
        grad_outputs: The gradient of each output (None: 1 for scalar outputs).
        retain_graph: Keep the graph's saved values for another backward.
        create_graph: Not supported (no higher-order gradients).
        allow_unused: Return None for an input the outputs do not depend on.
        materialize_grads: Return zeros instead of None for unused inputs.
    """
    if create_graph:
        raise NotImplementedError("create_graph=True (higher-order gradients) is not supported")
    outs, ins = _as_tuple(outputs), _as_tuple(inputs)
    gouts = (None,) * len(outs) if grad_outputs is None else _as_tuple(grad_outputs)
    if len(gouts) != len(outs):
        raise RuntimeError(
            f"grad requires one grad_output per output: got {len(gouts)} grad_outputs and "
            f"{len(outs)} outputs"
        )
    for t in ins:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    root_grads = [_root_grad(o, g, i) for i, (o, g) in enumerate(zip(outs, gouts))]
    edges = [_edge(t) for t in ins]
    captured = run_backward(outs, root_grads, bool(retain_graph), capture=edges)
    assert captured is not None
    result = []
    for i, (t, g) in enumerate(zip(ins, captured)):
        if g is None:
            if materialize_grads:
                g = np.zeros_like(t._data)
            elif not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior."
                )
        result.append(None if g is None else wrap(np.array(g, dtype=t._data.dtype)))
    return tuple(result)


class GradcheckError(RuntimeError):
    """Analytical and numerical gradients disagree."""


def gradcheck(
    func: Callable[..., Any],
    inputs: Any,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
) -> bool:
    """Compare ``func``'s gradients with central finite differences (use float64 inputs).

    Every output element is back-propagated on its own (one row of the Jacobian at
    a time), and every element of every input that requires grad is perturbed by
    ``eps`` in both directions.
    """
    ins = _as_tuple(inputs)
    diff = [t for t in ins if isinstance(t, TensorCore) and t.requires_grad]
    for oi, out in enumerate(_floats(func(*ins))):
        if not out.requires_grad:
            continue
        analytical = _analytical(func, ins, diff, oi, out)
        numerical = _numerical(func, ins, diff, oi, eps)
        for k, (a, n) in enumerate(zip(analytical, numerical)):
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(
                    f"Jacobian mismatch for output {oi} with respect to input {k},\n"
                    f"numerical:{n}\nanalytical:{a}\n"
                )
    return True


def _analytical(func: Callable[..., Any], ins: Sequence[Any], diff: Sequence[Any], oi: int,
                out: Any) -> list[np.ndarray]:
    n_out = out._data.size
    jac = [np.zeros((n_out, t._data.size)) for t in diff]
    for j in range(n_out):
        o = _floats(func(*ins))[oi]
        seed = np.zeros(n_out, dtype=o._data.dtype)
        seed[j] = 1
        grads = grad(o, diff, seed.reshape(o._data.shape), allow_unused=True)
        for k, g in enumerate(grads):
            if g is not None:
                jac[k][j] = g._data.reshape(-1)
    return jac


def _numerical(func: Callable[..., Any], ins: Sequence[Any], diff: Sequence[Any], oi: int,
               eps: float) -> list[np.ndarray]:
    jac = []
    with no_grad():
        for t in diff:
            arr = t._data
            cols = []
            for j in range(arr.size):
                orig = arr.flat[j]
                arr.flat[j] = orig + eps
                plus = np.array(_floats(func(*ins))[oi]._data, dtype=np.float64)
                arr.flat[j] = orig - eps
                minus = np.array(_floats(func(*ins))[oi]._data, dtype=np.float64)
                arr.flat[j] = orig
                cols.append(((plus - minus) / (2 * eps)).reshape(-1))
            jac.append(np.stack(cols, axis=1) if cols else np.zeros((0, 0)))
    return jac


def _floats(outs: Any) -> list[Any]:
    """The floating-point outputs (under no_grad nothing requires grad, so pick by dtype)."""
    return [o for o in _as_tuple(outs) if o.dtype.is_floating_point]
