"""``Function``: differentiable operations that users write, as ``torch.autograd.Function``.

A subclass defines ``forward`` and ``backward`` on Tensors. ``apply`` runs
``forward`` without recording (the ops inside it leave no graph), then gives the
outputs one ``grad_fn``: a ``<Name>Backward`` node of the engine in
``mininn.autograd.graph``, whose backward calls the subclass's ``backward``
with Tensors. Under ``no_grad``, or when no input requires grad, ``apply`` only
runs ``forward``. Two ways to write ``forward``, as in torch::

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):                    # forward receives the ctx
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):                # one gradient per input of forward
            (y,) = ctx.saved_tensors
            return grad * y

    class Exp(Function):
        @staticmethod
        def forward(x):                         # forward without ctx ...
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output): # ... and the ctx filled afterwards
            ctx.save_for_backward(output)

        backward = ...                          # as above

    y = Exp.apply(x)

The ctx is a :class:`~mininn.autograd.function_ctx.FunctionCtx`; the node reads
its attributes through (``y.grad_fn.saved_tensors``), but unlike torch it is a
separate object, so a user's ``ctx.next = ...`` cannot touch the engine's fields.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from mininn._functions._util import unbroadcast
from mininn._tensor_core import TensorCore
from mininn.autograd.function_ctx import FunctionCtx, c_type_name
from mininn.autograd.grad_mode import _state
from mininn.autograd.graph import _FLOAT_NP, Node, _edge, wrap

__all__ = ["BackwardCFunction", "Function", "FunctionCtx", "once_differentiable"]

F = TypeVar("F", bound=Callable[..., Any])

_signature = functools.lru_cache(maxsize=512)(inspect.signature)  # forward's, read on every apply

LEGACY_MESSAGE = (
    "Legacy autograd function with non-static forward method is deprecated. Please use new-style "
    "autograd function with static forward method. "
    "(Example: https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
)
DIRTY_NOT_RETURNED = (
    "Some elements marked as dirty during the forward method were not returned as output. The "
    "inputs that are modified inplace must all be outputs of the Function."
)
DIRTY_NOT_INPUT = (
    "ctx.mark_dirty() received a tensor that was not an input. Only input Tensors that have been "
    "mutated should be passed to ctx.mark_dirty()."
)
DIRTY_LEAF = "a leaf Variable that requires grad has been used in an in-place operation."
ONCE_DIFFERENTIABLE = "trying to differentiate twice a function that was marked with @once_differentiable"


class BackwardCFunction(Node):
    """The graph node of one ``Function.apply`` call; each Function has its ``<Name>Backward``.

    ``next`` holds one edge per Tensor input of ``forward``; ``arg_layout`` tells, per
    input, whether it was a Tensor (0) or not (-1); ``out_meta`` holds each output's
    shape and dtype (None for an output that is not a Tensor).
    """

    __slots__ = ("_input_meta",)
    _forward_cls: type[Function]

    def __init__(
        self,
        ctx: FunctionCtx,
        edges: tuple[tuple[Node, int] | None, ...],
        arg_layout: tuple[int, ...],
        input_meta: tuple[tuple[tuple[int, ...], Any], ...],
        out_meta: tuple[Any, ...],
    ) -> None:
        super().__init__(type(self)._forward_cls, ctx, edges, arg_layout, out_meta)  # type: ignore[arg-type]
        self._input_meta = input_meta

    def name(self) -> str:
        return type(self).__name__

    def __getattr__(self, attr: str) -> Any:
        # only reached for names the node lacks: the ctx's (saved_tensors, user attributes)
        if attr == "ctx" or attr.startswith("__"):
            raise AttributeError(attr)
        return getattr(self.ctx, attr)

    def _materialize_grads(self, grads: list[Any]) -> list[Any]:
        if not self.ctx.materialize_grads:  # type: ignore[union-attr]
            return grads
        return [
            np.zeros(meta[0], meta[1]) if g is None and meta is not None else g
            for g, meta in zip(grads, self.out_meta)
        ]

    def apply(self, grads: list[Any]) -> tuple[Any, ...]:
        """The user's backward on Tensors; its gradients checked and unwrapped per Tensor input."""
        user_fn = _user_backward(type(self)._forward_cls)
        result = user_fn(self.ctx, *(None if g is None else wrap(g) for g in grads))
        tensors = self._per_tensor_input(result)
        return tuple(self._checked(i, g) for i, g in enumerate(tensors))

    def _per_tensor_input(self, result: Any) -> list[Any]:
        name, n = self.name(), len(self.arg_layout)
        if not isinstance(result, tuple):
            result = (result,)
        if len(result) > n and all(g is None for g in result[n:]):
            result = result[:n]  # extra trailing Nones are allowed
        if len(result) != n:
            raise RuntimeError(
                f"function {name} returned an incorrect number of gradients (expected {n}, "
                f"got {len(result)})"
            )
        tensors = []
        for position, (layout, g) in enumerate(zip(self.arg_layout, result), start=1):
            if layout < 0:
                if g is not None:
                    raise RuntimeError(
                        f"function {name} returned a gradient different than None at position "
                        f"{position}, but the corresponding forward input was not a Variable"
                    )
                continue
            if g is not None and not isinstance(g, TensorCore):
                raise RuntimeError(f"expected Variable or None (got {c_type_name(g)})")
            tensors.append(g)
        return tensors

    def _checked(self, index: int, grad: Any) -> Any:
        """``grad``'s array, summed to the input's shape where it broadcasts, in its dtype."""
        if grad is None or self.next[index] is None:
            return None  # an input that needs no gradient: torch drops it unchecked
        shape, dtype = self._input_meta[index]
        array = grad._data
        if array.shape != shape:
            if not _expandable(shape, array.shape):
                raise RuntimeError(
                    f"Function {self.name()} returned an invalid gradient at index {index} - got "
                    f"{list(array.shape)} but expected shape compatible with {list(shape)}"
                )
            array = unbroadcast(array, shape)
        return array if array.dtype == dtype else array.astype(dtype)


def _expandable(shape: tuple[int, ...], to: tuple[int, ...]) -> bool:
    if len(shape) > len(to):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(to)))


def _user_backward(cls: type[Function]) -> Callable[..., Any]:
    backward, vjp = cls.backward, cls.vjp
    if backward is not Function.backward and vjp is not Function.vjp:
        raise RuntimeError(
            "Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You "
            "should only implement one of them."
        )
    return vjp if vjp is not Function.vjp else backward


class Function:
    """Base class of differentiable operations written by users (``torch.autograd.Function``).

    Subclasses define static ``forward`` and ``backward`` methods (and optionally
    ``setup_context``) and are called through :meth:`apply`, never instantiated.
    """

    generate_vmap_rule = False
    _backward_cls: type[BackwardCFunction]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._backward_cls = type(
            f"{cls.__name__}Backward",
            (BackwardCFunction,),
            {"__slots__": (), "_forward_cls": cls, "__module__": "mininn.autograd.graph"},
        )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn(
            f"{self.__class__} should not be instantiated. Methods on autograd functions are all "
            "static, so you should invoke them on the class itself. Instantiating an autograd "
            "function will raise an error in a future version of PyTorch.",
            DeprecationWarning,
            stacklevel=2,
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(LEGACY_MESSAGE)

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        """The computation, on Tensors: ``forward(ctx, *inputs)``, or ``forward(*inputs)``
        with :meth:`setup_context`."""
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx: FunctionCtx, inputs: tuple[Any, ...], output: Any) -> None:
        """Fill ``ctx`` from the inputs and output of a ``forward`` that takes no ctx."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        """One gradient (Tensor or None) per input of ``forward``, from one per output."""
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    vjp = backward

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        """Forward-mode AD (mininn has none)."""
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with "
            "forward mode AD."
        )

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` on ``args`` and connect its Tensor outputs to the graph.

        Keyword arguments fill ``forward``'s positional parameters by name, as in torch.
        """
        with_setup = cls.setup_context is not Function.setup_context
        if with_setup:
            bound = _signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        inputs = _positional_inputs(cls.forward, args, kwargs, takes_ctx=not with_setup)
        return _run(cls, inputs, with_setup)


def _positional_inputs(forward: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                       takes_ctx: bool) -> tuple[Any, ...]:
    """``args`` extended by ``kwargs`` placed at their parameters' positions (torch's rule: no
    gaps, no defaults filled in, keyword-only parameters refused)."""
    if not kwargs:
        return args
    params = list(_signature(forward).parameters.values())
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if takes_ctx and params and params[0].kind in positional:
        params = params[1:]
    names = []
    for p in params:
        if p.kind not in positional:
            break
        names.append(p.name)
    placed: dict[int, Any] = {}
    for key, value in kwargs.items():
        if key not in names:
            raise TypeError(f"forward() got an unexpected keyword argument '{key}'")
        index = names.index(key)
        if index < len(args):
            raise TypeError(f"forward() got multiple values for argument '{key}'")
        placed[index] = value
    filled = list(args)
    for index in range(len(args), max(placed) + 1):
        if index not in placed:
            raise TypeError(f"forward() missing required argument: '{names[index]}' (position {index})")
        filled.append(placed[index])
    return tuple(filled)


def _run(cls: type[Function], inputs: tuple[Any, ...], with_setup: bool) -> Any:
    needs = tuple(isinstance(a, TensorCore) and a.requires_grad for a in inputs)
    record = _state.enabled and any(needs)
    tensors = [a for a in inputs if isinstance(a, TensorCore)]
    edges = tuple(_edge(t) for t in tensors) if record else ()  # before forward can rebase inputs
    ctx = FunctionCtx()
    ctx.needs_input_grad = needs
    previous = _state.enabled
    _state.enabled = False
    try:
        if with_setup:
            output = cls.forward(*inputs)
            cls.setup_context(ctx, inputs, output)
        else:
            output = cls.forward(ctx, *inputs)
    finally:
        _state.enabled = previous
    node = None
    outputs = tuple(output) if isinstance(output, tuple) else (output,)
    _check_dirty_returned(ctx, outputs)
    if record:
        ctx._check_saved()
        node = cls._backward_cls(
            ctx,
            edges,
            tuple(0 if isinstance(a, TensorCore) else -1 for a in inputs),
            tuple((t._data.shape, t._data.dtype) for t in tensors),
            tuple((o._data.shape, o._data.dtype) if isinstance(o, TensorCore) else None for o in outputs),
        )
    results = tuple(_set_history(o, i, node, ctx, inputs) for i, o in enumerate(outputs))
    return results if isinstance(output, tuple) else results[0]


def _check_dirty_returned(ctx: FunctionCtx, outputs: tuple[Any, ...]) -> None:
    for t in ctx.dirty_tensors:
        if not any(t is o for o in outputs):
            raise RuntimeError(DIRTY_NOT_RETURNED)


def _contains(items: tuple[Any, ...], value: Any) -> bool:
    return any(value is item for item in items)


def _set_history(out: Any, index: int, node: BackwardCFunction | None, ctx: FunctionCtx,
                 inputs: tuple[Any, ...]) -> Any:
    """One output of forward as apply returns it: torch's rules for inputs returned as they are,
    inputs modified in place, and non-differentiable outputs."""
    if not isinstance(out, TensorCore):
        return out
    is_input = _contains(inputs, out)
    is_modified = _contains(ctx.dirty_tensors, out)
    differentiable = (
        node is not None and not _contains(ctx.non_differentiable, out) and out._data.dtype in _FLOAT_NP
    )
    if not differentiable:
        if not out.requires_grad:
            return wrap(out._data) if is_input and not is_modified else out
        if is_input:
            return out.detach()
        out.detach_()
        return out
    if is_modified:
        if out.grad_fn is None and out._requires_grad:
            raise RuntimeError(DIRTY_LEAF)
        if not is_input:
            warnings.warn(DIRTY_NOT_INPUT, UserWarning, stacklevel=4)
    elif is_input:
        out = wrap(out._data)  # a new Tensor on the same data, as torch's view of the input
    out.grad_fn = node
    out._output_nr = index
    return out


class _DelayedError(Node):
    """A node whose backward raises: the outputs of a ``once_differentiable`` backward run
    with grad enabled carry it, so differentiating them again fails with torch's message."""

    __slots__ = ("_message",)

    def __init__(self, message: str, edges: tuple[Any, ...], out_meta: tuple[Any, ...]) -> None:
        super().__init__(None, None, edges, (0,) * len(edges), out_meta)
        self._message = message

    def name(self) -> str:
        return "Error"

    def apply(self, grads: list[Any]) -> tuple[Any, ...]:
        raise RuntimeError(self._message)


def once_differentiable(fn: F) -> F:
    """Decorate a ``backward`` that is not differentiable itself: it runs under ``no_grad``,
    and differentiating its result raises (torch's ``once_differentiable``)."""

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        previous = _state.enabled
        _state.enabled = False
        try:
            outputs = fn(ctx, *args, **kwargs)
        finally:
            _state.enabled = previous
        if not _state.enabled:
            return outputs
        if not any(isinstance(a, TensorCore) and a.requires_grad for a in args):
            return outputs
        return _delayed_error(outputs)

    return wrapper  # type: ignore[return-value]


def _delayed_error(outputs: Any) -> Any:
    outs = outputs if isinstance(outputs, tuple) else (outputs,)
    leaves = []
    for o in outs:
        if o is not None:
            o = o.detach()
            o.requires_grad = True
        leaves.append(o)
    present = [t for t in leaves if t is not None]
    node = _DelayedError(
        ONCE_DIFFERENTIABLE,
        tuple(_edge(t) for t in present),
        tuple((t._data.shape, t._data.dtype) for t in present),
    )
    results: list[Any] = []
    for t in leaves:
        if t is not None:
            alias = wrap(t._data)
            alias.grad_fn = node
            alias._output_nr = sum(r is not None for r in results)
            t = alias
        results.append(t)
    return tuple(results) if isinstance(outputs, tuple) else results[0]
