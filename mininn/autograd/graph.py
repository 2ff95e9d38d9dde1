"""The seam between Tensors and arrays, and the autograd graph.

``ArrayFunction`` is an op with forward and backward on raw arrays; ``ArrayFunction.apply``
is the one place that unwraps Tensors into arrays, wraps the results into Tensors
(``wrap``) and records the graph: ``Node`` (one recorded call of an ArrayFunction) and
the backward engine. Tensors are made in the class that ``mininn.tensor`` hands
over once with ``set_tensor_class``.

Design (micrograd's, made iterative and multi-output): each op call that
needs a gradient records a ``Node`` whose ``next`` edges point at the nodes
of its inputs (an ``AccumulateGrad`` node for a leaf). ``run_backward`` counts
dependencies over the reachable graph, then walks it in topological order
with an explicit stack (no recursion, so 10,000-deep chains work), summing
the gradients that reach each node before calling its backward once.

Writing an op::

    class Exp(ArrayFunction):
        @staticmethod
        def forward(ctx, x):             # x: ndarray (Tensors are unwrapped)
            y = np.exp(x)
            ctx.save_for_backward(y)     # freed after backward unless retain_graph
            return y
        @staticmethod
        def backward(ctx, grad):         # grad: ndarray
            (y,) = ctx.saved_tensors
            return grad * y              # one gradient per positional input

    y = Exp.apply(x)                     # Tensor in, Tensor out

With grad mode off (``no_grad``, ``inference_mode``) ``apply`` takes a shorter path
(``_apply_untracked``): it unwraps, runs ``forward`` and wraps each result once, reading no
input's grad state. Hot functionals (``F.linear``, ``F.relu``) go further under no-grad and
compute on the arrays without an ``apply`` at all, with the same arithmetic as their op.

``backward`` returns one gradient (or None) per positional argument of
``forward``; an argument that is a list of Tensors (``cat``) takes a list of
gradients. Keyword arguments are never differentiated.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mininn._backend import device_of
from mininn._dtype import _FROM_NP
from mininn._tensor_core import Size, TensorCore
from mininn.autograd import views as _views
from mininn.autograd.grad_mode import _state
from mininn.utils.hooks import RemovableHandle

if TYPE_CHECKING:
    from mininn.tensor import Tensor

# outputs of these dtypes (floating and complex) get a grad_fn; others (indices, masks) never require grad
_FLOAT_NP = frozenset(np_dtype for np_dtype, d in _FROM_NP.items() if d.is_floating_point or d.is_complex)

__all__ = [
    "ArrayFunction",
    "Context",
    "Node",
    "AccumulateGrad",
    "run_backward",
    "wrap",
    "set_tensor_class",
    "view_op",
]

# the public Tensor class (mininn.tensor.Tensor), which every op result is made in; None until
# mininn.tensor is imported, so an op run before that fails instead of making bare TensorCores
_tensor_class: Any = None


def set_tensor_class(cls: type[TensorCore]) -> None:
    """Make op results instances of ``cls`` (``mininn.tensor`` calls this once, for ``Tensor``)."""
    global _tensor_class
    _tensor_class = cls


def wrap(data: Any, requires_grad: bool = False) -> Tensor:
    """A Tensor holding ``data`` (an array of the device's array module, or array-like)."""
    return _tensor_class(data, requires_grad)  # type: ignore[return-value]

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved "
    "tensors after they have already been freed). Saved intermediate values of the graph "
    "are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if "
    "you need to backward through the graph a second time or if you need to access saved "
    "tensors after calling backward."
)


class Context:
    """What ``forward`` leaves for ``backward``: saved arrays and attributes."""

    _saved: tuple[Any, ...] = ()
    _freed: bool = False
    needs_input_grad: tuple[bool, ...] = ()

    def save_for_backward(self, *arrays: Any) -> None:
        self._saved = arrays

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        if self._freed:
            raise RuntimeError(FREED_MESSAGE)
        return self._saved

    def _free(self) -> None:
        # Only arrays saved with save_for_backward are freed (and then raise on reuse),
        # as in torch; small attributes such as shapes stay.
        if self._saved:
            self._saved = ()
            self._freed = True


class Node:
    """One recorded op call: ``next`` holds one edge per differentiable input.

    Torch-compatible views: ``name()`` (``"MulBackward0"``), ``next_functions``
    (pairs of node and input index), ``register_hook``/``register_prehook``.
    """

    __slots__ = (
        "fn",
        "ctx",
        "next",
        "arg_layout",
        "n_outputs",
        "out_meta",
        "pre_hooks",
        "post_hooks",
        "__weakref__",
    )

    def __init__(
        self,
        fn: type[ArrayFunction] | None,
        ctx: Context | None,
        next_edges: tuple[tuple[Node, int] | None, ...],
        arg_layout: tuple[int, ...],
        out_meta: tuple[tuple[tuple[int, ...], Any], ...],
    ) -> None:
        self.fn = fn
        self.ctx = ctx
        self.next = next_edges
        # arg_layout[i]: -1 for a non-tensor arg, 0 for one tensor, n for a list of n tensors
        self.arg_layout = arg_layout
        self.out_meta = out_meta
        self.n_outputs = len(out_meta)
        self.pre_hooks: dict[int, list[Callable[..., Any]]] | None = None
        self.post_hooks: list[Callable[..., Any]] | None = None

    def name(self) -> str:
        if self.fn is None:
            return f"{type(self.fn).__name__}Backward0"
        return getattr(self.fn, "node_name", None) or f"{self.fn.__name__}Backward0"

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"

    @property
    def next_functions(self) -> tuple[tuple[Node | None, int], ...]:
        return tuple((None, 0) if e is None else e for e in self.next)

    def register_prehook(self, hook: Callable[..., Any], output_nr: int = 0) -> Any:
        """``hook(grad_outputs_tuple)`` runs before this node; it may return new grads."""
        if self.pre_hooks is None:
            self.pre_hooks = {}
        hooks = self.pre_hooks.setdefault(-1, [])
        hooks.append(hook)
        return RemovableHandle(hooks, hook)

    def register_hook(self, hook: Callable[..., Any]) -> Any:
        """``hook(grad_inputs, grad_outputs)`` runs after this node; may return new grad_inputs."""
        if self.post_hooks is None:
            self.post_hooks = []
        self.post_hooks.append(hook)
        return RemovableHandle(self.post_hooks, hook)

    def _add_tensor_hook(self, output_nr: int, hook: Callable[..., Any]) -> list[Any]:
        if self.pre_hooks is None:
            self.pre_hooks = {}
        hooks = self.pre_hooks.setdefault(output_nr, [])
        hooks.append(hook)
        return hooks

    def _materialize_grads(self, grads: list[Any]) -> list[Any]:
        """The gradients ``apply`` receives: zeros for outputs that got none (of several)."""
        if self.n_outputs == 1:
            return grads
        return [
            g if g is not None else np.zeros(shape, dtype)
            for g, (shape, dtype) in zip(grads, self.out_meta)
        ]

    def apply(self, grads: list[Any]) -> tuple[Any, ...]:
        """Gradients for each ``next`` edge from gradients of each output."""
        raw = self.fn.backward(self.ctx, *grads)  # type: ignore[union-attr]
        if self.n_outputs == 1 and len(self.arg_layout) == 1:
            raw = (raw,)
        elif not isinstance(raw, tuple):
            raw = (raw,)
        if len(raw) != len(self.arg_layout):
            raise RuntimeError(
                f"function {self.fn.__name__}Backward returned an incorrect number of "  # type: ignore[union-attr]
                f"gradients (expected {len(self.arg_layout)}, got {len(raw)})"
            )
        flat: list[Any] = []
        for layout, g in zip(self.arg_layout, raw):
            if layout == 0:
                flat.append(g)
            elif layout > 0:
                flat.extend(g if g is not None else [None] * layout)
        return tuple(flat)


class AccumulateGrad(Node):
    """The node of a leaf tensor: adds the incoming gradient into ``.grad``."""

    __slots__ = ("_variable",)

    def __init__(self, tensor: Tensor) -> None:
        super().__init__(None, None, (), (), ((tuple(tensor.shape), tensor._data.dtype),))
        self._variable = weakref.ref(tensor)  # the leaf owns this node, not the reverse

    @property
    def variable(self) -> Tensor | None:
        """The leaf tensor this node accumulates into (None once it is gone)."""
        return self._variable()

    def name(self) -> str:
        return "AccumulateGrad"

    def apply(self, grads: list[Any]) -> tuple[Any, ...]:
        tensor = self._variable()
        if tensor is None:
            return ()
        (grad,) = grads
        for hook in tuple(tensor._hooks or ()):
            new = hook(wrap(grad))
            if new is not None:
                grad = new._data
        _accumulate(tensor, grad)
        return ()


def _accumulate(tensor: Tensor, grad: Any) -> None:
    if grad.shape != tensor._data.shape:
        grad = grad.reshape(tensor._data.shape) if grad.size == tensor._data.size else grad
    if grad.dtype != tensor._data.dtype:
        grad = grad.astype(tensor._data.dtype)
    if tensor.grad is None:
        # copy: backward may hand the same array to several inputs
        tensor.grad = wrap(grad.copy())
    else:
        tensor.grad._data = tensor.grad._data + grad


def _edge(tensor: Tensor) -> tuple[Node, int] | None:
    if tensor.grad_fn is not None:
        return (tensor.grad_fn, tensor._output_nr)
    if tensor._requires_grad:
        acc = tensor._accumulator
        if acc is None:
            acc = tensor._accumulator = AccumulateGrad(tensor)
        return (acc, 0)
    return None


class ArrayFunction:
    """An op with ``forward(ctx, *arrays)`` and ``backward(ctx, *grads)`` on raw arrays.

    In ``backward``, ``ctx.needs_input_grad[i]`` tells whether positional input ``i``
    needs a gradient (return None for it otherwise). Outputs that are not floating
    point (indices, masks) never require grad.
    """

    # a view op (``view_op``): its outputs may share its first argument's array
    is_view = False

    @staticmethod
    def forward(ctx: Context, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Context, *grad_outputs: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        if not _state.enabled:
            return _apply_untracked(cls, args, kwargs)
        raw_args: list[Any] = []
        needs_grad = False
        kind: Any = None
        for a in args:
            if isinstance(a, TensorCore):
                d = a._data
                if kind is None:
                    kind = type(d)
                elif type(d) is not kind:
                    _raise_mixed_devices(args)
                if a._requires_grad or a.grad_fn is not None:
                    needs_grad = True
                elif a._view is not None and _views.adopt(a):  # its base got a history since
                    needs_grad = True
                raw_args.append(d)
            elif (type(a) is list or type(a) is tuple) and a and isinstance(a[0], TensorCore):
                for t in a:
                    if kind is None:
                        kind = type(t._data)
                    elif type(t._data) is not kind:
                        _raise_mixed_devices(a)
                    if t._requires_grad or t.grad_fn is not None:
                        needs_grad = True
                    elif t._view is not None and _views.adopt(t):
                        needs_grad = True
                raw_args.append([t._data for t in a])
            else:
                raw_args.append(a)
        ctx = Context()
        if kwargs:
            kwargs = {k: (v._data if isinstance(v, TensorCore) else v) for k, v in kwargs.items()}
            out = cls.forward(ctx, *raw_args, **kwargs)
        else:
            out = cls.forward(ctx, *raw_args)
        if needs_grad and _state.enabled:
            result = _record(cls, ctx, args, out)
        elif type(out) is tuple:
            result = tuple([_tensor_class(o) for o in out])
        else:
            result = _tensor_class(out)
        if cls.is_view:
            _views.link_views(cls, args[0], result)
        return result


def _apply_untracked(cls: type[ArrayFunction], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``cls.apply`` with grad mode off: unwrap, forward, wrap. No input's grad state is read (nothing
    is recorded whatever it is) and each result is wrapped once."""
    raw_args: list[Any] = []
    kind: Any = None
    for a in args:
        if isinstance(a, TensorCore):
            d = a._data
            if kind is None:
                kind = type(d)
            elif type(d) is not kind:
                _raise_mixed_devices(args)
            raw_args.append(d)
        elif (type(a) is list or type(a) is tuple) and a and isinstance(a[0], TensorCore):
            for t in a:
                if kind is None:
                    kind = type(t._data)
                elif type(t._data) is not kind:
                    _raise_mixed_devices(a)
            raw_args.append([t._data for t in a])
        else:
            raw_args.append(a)
    if kwargs:
        kwargs = {k: (v._data if isinstance(v, TensorCore) else v) for k, v in kwargs.items()}
        out = cls.forward(Context(), *raw_args, **kwargs)
    else:
        out = cls.forward(Context(), *raw_args)
    result = tuple([_tensor_class(o) for o in out]) if type(out) is tuple else _tensor_class(out)
    if cls.is_view:
        _views.link_views(cls, args[0], result)
    return result


def view_op(cls: type[ArrayFunction]) -> type[ArrayFunction]:
    """Make ``cls`` a view op: outputs that share its first argument's array are marked views of
    that tensor's base (``mininn.autograd.views``), which in-place ops on them write through."""
    cls.is_view = True
    return cls


def _record(cls: type[ArrayFunction], ctx: Context, args: tuple[Any, ...], out: Any) -> Any:
    """Wrap ``out`` in tensors whose ``grad_fn`` is a new Node with edges to ``args``."""
    tensor_cls = _tensor_class
    edges: list[tuple[Node, int] | None] = []
    layout: list[int] = []
    needs: list[bool] = []
    for a in args:
        if isinstance(a, TensorCore):
            edge = _edge(a)
            edges.append(edge)
            layout.append(0)
            needs.append(edge is not None)
        elif (type(a) is list or type(a) is tuple) and a and isinstance(a[0], TensorCore):
            sub = [_edge(t) for t in a]
            edges.extend(sub)
            layout.append(len(a))
            needs.append(sub.count(None) < len(sub))
        else:
            layout.append(-1)
            needs.append(False)
    ctx.needs_input_grad = tuple(needs)
    if type(out) is not tuple:
        node = Node(cls, ctx, tuple(edges), tuple(layout), ((out.shape, out.dtype),))
        result = tensor_cls(out)
        if out.dtype in _FLOAT_NP:
            result.grad_fn = node
        return result
    node = Node(cls, ctx, tuple(edges), tuple(layout), tuple([(o.shape, o.dtype) for o in out]))
    results = []
    for i, o in enumerate(out):
        t = tensor_cls(o)
        if o.dtype in _FLOAT_NP:
            t.grad_fn = node
            t._output_nr = i
        results.append(t)
    return tuple(results)


def _raise_mixed_devices(tensors: Sequence[Any]) -> None:
    devs = sorted({str(device_of(t._data)) for t in tensors if isinstance(t, TensorCore)}, reverse=True)
    raise RuntimeError(
        "Expected all tensors to be on the same device, but found at least two devices, "
        f"{devs[0]} and {devs[1]}!"
    )


def _check_same_device(tensors: Sequence[Tensor]) -> None:
    first = type(tensors[0]._data)
    if any(type(t._data) is not first for t in tensors):
        _raise_mixed_devices(tensors)


def _root_grad(t: TensorCore, gradient: Any, i: int) -> Any:
    """The gradient that seeds backward from ``t`` (implicit 1 for a scalar)."""
    if gradient is None:
        if t._data.size != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        if not t.dtype.is_floating_point:
            raise RuntimeError(
                f"grad can be implicitly created only for real scalar outputs but got {t.dtype}"
            )
        return np.ones_like(t._data)
    g = gradient._data if isinstance(gradient, TensorCore) else np.asarray(gradient)
    if g.shape != t._data.shape:
        raise RuntimeError(
            f"Mismatch in shape: grad_output[{i}] has a shape of {Size(g.shape)} and "
            f"output[{i}] has a shape of {t.shape}."
        )
    return g.astype(t._data.dtype, copy=False)


def _collect(roots: Sequence[Node]) -> dict[Node, int]:
    """Dependency counts: how many edges from reachable nodes point at each node."""
    deps: dict[Node, int] = {}
    seen: set[int] = set()
    stack = list(roots)
    for r in roots:
        seen.add(id(r))
        deps.setdefault(r, 0)
    while stack:
        node = stack.pop()
        for edge in node.next:
            if edge is None:
                continue
            nxt = edge[0]
            deps[nxt] = deps.get(nxt, 0) + 1
            if id(nxt) not in seen:
                seen.add(id(nxt))
                stack.append(nxt)
    return deps


def _add(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def run_backward(
    roots: Sequence[Tensor],
    grad_roots: Sequence[Any],
    retain_graph: bool = False,
    capture: Sequence[tuple[Node, int]] | None = None,
) -> list[Any] | None:
    """Backpropagate ``grad_roots`` from ``roots`` into every reachable leaf's ``.grad``.

    With ``capture`` (graph edges of the tensors ``autograd.grad`` differentiates
    against), the gradients reaching those edges are returned instead and no
    leaf's ``.grad`` changes.
    """
    buffers: dict[Node, list[Any]] = {}
    root_nodes: list[Node] = []
    for i, (t, g) in enumerate(zip(roots, grad_roots)):
        edge = _edge(t)
        if edge is None:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )
        node, nr = edge
        buf = buffers.setdefault(node, [None] * node.n_outputs)
        buf[nr] = _add(buf[nr], g)
        root_nodes.append(node)
    captured: list[Any] | None = None
    targets: dict[Node, list[tuple[int, int]]] = {}
    if capture is not None:
        captured = [None] * len(capture)
        for i, (node, nr) in enumerate(capture):
            targets.setdefault(node, []).append((nr, i))
    deps = _collect(root_nodes)
    ready = [n for n in dict.fromkeys(root_nodes) if deps[n] == 0]
    prev_mode = _state.enabled
    _state.enabled = False  # backward itself records nothing
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(node, None)
            if captured is not None:
                if grads is not None and node in targets:
                    for nr, i in targets[node]:
                        captured[i] = grads[nr]
                if type(node) is AccumulateGrad:
                    continue
            input_grads: tuple[Any, ...] = ()
            if grads is not None and any(g is not None for g in grads):
                grads = node._materialize_grads(grads)
                if node.pre_hooks:
                    grads = _run_pre_hooks(node, grads)
                input_grads = node.apply(grads)
                if node.post_hooks:
                    input_grads = _run_post_hooks(node, input_grads, grads)
                if not retain_graph and node.ctx is not None:
                    node.ctx._free()
            for i, edge in enumerate(node.next):
                if edge is None:
                    continue
                nxt, nr = edge
                g = input_grads[i] if i < len(input_grads) else None
                if g is not None:
                    nbuf = buffers.get(nxt)
                    if nbuf is None:
                        nbuf = buffers[nxt] = [None] * nxt.n_outputs
                    nbuf[nr] = _add(nbuf[nr], g)
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    ready.append(nxt)
    finally:
        _state.enabled = prev_mode
    return captured


def _run_pre_hooks(node: Node, grads: list[Any]) -> list[Any]:
    assert node.pre_hooks is not None
    for output_nr, hooks in list(node.pre_hooks.items()):
        if output_nr < 0:
            continue
        for hook in tuple(hooks):
            if grads[output_nr] is None:  # an output without gradient (set_materialize_grads(False))
                break
            new = hook(wrap(grads[output_nr]))
            if new is not None:
                grads[output_nr] = new._data
    for hook in tuple(node.pre_hooks.get(-1, ())):
        new = hook(tuple(None if g is None else wrap(g) for g in grads))
        if new is not None:
            grads = [None if g is None else g._data for g in new]
    return grads


def _run_post_hooks(node: Node, input_grads: tuple[Any, ...], grads: list[Any]) -> tuple[Any, ...]:
    assert node.post_hooks is not None
    for hook in tuple(node.post_hooks):
        wrapped_in = tuple(None if g is None else wrap(g) for g in input_grads)
        wrapped_out = tuple(None if g is None else wrap(g) for g in grads)
        new = hook(wrapped_in, wrapped_out)
        if new is not None:
            input_grads = tuple(None if g is None else g._data for g in new)
    return input_grads
