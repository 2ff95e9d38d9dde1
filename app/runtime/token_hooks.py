"""Per-token edits and captures at work: checked against the model, then applied by forward hooks.

:func:`plan_sequence` resolves a request's edits and capture against the model (module names,
each module's per-token output shape, the edit's index and value, steps and positions within
the request) before the sequence is queued, so a bad request is a 422 that changes nothing.

:func:`step_hooks` registers forward hooks on the modules the batch's plans name for one
generator call (a prefill, or a decode step of several sequences) and removes them after.
Row ``b`` of a module's output ``(batch, tokens, ...)`` belongs to the ``b``-th sequence of the
call (a generator that runs each sequence in its own forward gives one row per call, in order),
and its tokens are that sequence's newest positions. A hook edits only the rows of sequences
that asked, so sequences sharing a decode step never see each other's edits. The hooks act only
on the engine thread: another thread running the same module (``/infer``) passes through.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

import mininn
from app.errors import PayloadTooLargeError, UnprocessableError
from app.runtime.token_edits import SelectorError, SequencePlan, StepCapture, TokenEdit, step_of
from app.v2.tensors import host_array
from mininn import Tensor
from mininn.nn import ActivationCapture, CaptureError, Module
from mininn.nn.capture import activation_stats, match_modules

__all__ = ["Row", "check_capture_size", "module_shapes", "plan_sequence", "step_hooks"]

Row = tuple[SequencePlan, int, int] | None
"""One sequence of a generator call: its plan, its length after the call, and the step."""

_shapes: weakref.WeakKeyDictionary[Any, dict[str, tuple[int, ...] | None]] = weakref.WeakKeyDictionary()
_shapes_lock = threading.Lock()


def module_shapes(generator: Any) -> dict[str, tuple[int, ...] | None]:
    """Module name -> the shape of one token's slice of its output, or None when its output is
    not one ``(batch, tokens, ...)`` tensor; found once per generator by a one-token prefill."""
    with _shapes_lock:
        found = _shapes.get(generator)
    if found is not None:
        return found
    with mininn.no_grad(), ActivationCapture(generator.module, "*") as capture:
        seq = generator.new_sequence()
        try:
            generator.prefill(seq, [0])
        finally:
            generator.release(seq)
    results = capture.results
    found = {}
    for name, _ in generator.module.named_modules():
        if name:
            value = results.get(f"{name}:output")
            ok = isinstance(value, Tensor) and value.ndim >= 2 and tuple(value.shape[:2]) == (1, 1)
            found[name] = tuple(int(d) for d in value.shape[2:]) if ok else None
    with _shapes_lock:
        _shapes[generator] = found
    return found


def plan_sequence(
    edits: Sequence[TokenEdit], capture: Any, generator: Any, *, prompt_length: int, steps: int
) -> SequencePlan | None:
    """Resolve a request's edits and capture against the model; None when it has neither.

    Args:
        edits: the request's edits.
        capture: its :class:`~app.runtime.token_edits.TokenCapture`, or None.
        generator: the model's text generator.
        prompt_length: tokens in the prompt.
        steps: the most steps the request runs (its token limit).

    Raises:
        UnprocessableError: an unknown module (closest names listed), a module whose output is not
            a ``(batch, tokens, ...)`` tensor, an index or value that does not fit a token's slice,
            or steps or positions past the request.
    """
    if not edits and capture is None:
        return None
    shapes = module_shapes(generator)
    plan = SequencePlan(prompt_length=prompt_length, capture=capture)
    try:
        for edit in edits:
            edit.steps.check(steps, edit.label)
            edit.positions.check(prompt_length + steps - 1, edit.label)
            for name in _names(generator.module, edit.module, f"{edit.label}.module", shapes):
                _check_fits(edit, name, shapes[name])
                plan.edits.setdefault(name, []).append(edit)
        if capture is not None:
            capture.positions.check(prompt_length + steps - 1, "capture")
            names: list[str] = []
            for i, entry in enumerate(capture.modules):
                names += [n for n in _names(generator.module, entry, f"capture.modules[{i}]", shapes)
                          if n not in names]
            plan.captures = tuple(names)
    except (CaptureError, SelectorError) as exc:
        raise UnprocessableError(str(exc)) from None
    return plan


def check_capture_size(capture: Any, generator: Any, *, prompt_length: int, limit: int) -> None:
    """Refuse a capture whose largest step (the prompt's, with ``positions: "all"``) would record
    more than ``limit`` numbers (``MININN_MAX_ACTIVATION_ELEMENTS``); unknown modules are left to
    :func:`plan_sequence`.

    Raises:
        PayloadTooLargeError: over the limit, naming the total.
    """
    if capture is None or capture.reduce == "stats":
        return
    shapes = module_shapes(generator)
    positions = {"all": prompt_length, "last": 1}.get(capture.positions.kind, len(capture.positions.values))
    try:
        names = {n for entry in capture.modules for n, _ in match_modules(generator.module, [entry])}
    except CaptureError:
        return
    total = sum(positions * int(np.prod(shapes.get(n) or (0,))) for n in names)
    if total > limit:
        raise PayloadTooLargeError(
            f"the capture would record {total} numbers at one step, over the limit of {limit} "
            "(MININN_MAX_ACTIVATION_ELEMENTS): capture fewer modules or positions, or reduce='stats'"
        )


def _names(module: Module, entry: str, label: str, shapes: dict[str, Any]) -> list[str]:
    try:
        names = [name for name, _ in match_modules(module, [entry], field=label)]
    except CaptureError as exc:
        raise CaptureError(label, exc.detail) from None
    for name in names:
        if shapes.get(name) is None:
            raise CaptureError(
                label,
                f"'{name}' does not give one (batch, tokens, ...) tensor, so it has no per-token "
                "output to edit or record; choose a layer such as 'model.layers.0' or a projection",
            )
    return names


def _check_fits(edit: TokenEdit, name: str, shape: tuple[int, ...]) -> None:
    probe = Tensor(np.zeros((1, *shape), dtype=np.float32))
    edit.intervention.apply(probe, name, edit.label)


# ---- the hooks -------------------------------------------------------------------------------
@contextmanager
def step_hooks(module: Module, rows: Sequence[Row]) -> Iterator[None]:
    """Hooks for one generator call whose sequences are ``rows`` (None: a row without a plan)."""
    wanted = set().union(*(row[0].modules for row in rows if row is not None))
    if not wanted:
        yield
        return
    thread = threading.get_ident()
    handles = []
    try:
        for name, sub in module.named_modules():
            if name in wanted:
                width = len(_token_shapes(module).get(name) or ())
                handles.append(sub.register_forward_hook(_Hook(name, rows, thread, width)))
        yield
    finally:
        for handle in handles:
            handle.remove()


def _token_shapes(module: Module) -> dict[str, tuple[int, ...] | None]:
    for generator, shapes in list(_shapes.items()):
        if generator.module is module:
            return shapes
    return {}


class _Hook:
    """Edits and records one module's output, row by row.

    ``token_ndim``: the dimensions of one token's slice; an output with one dimension more
    than that is one token per row (``(batch, features)``, as some decode steps give).
    """

    def __init__(self, name: str, rows: Sequence[Row], thread: int, token_ndim: int) -> None:
        self.name, self.rows, self.thread, self.token_ndim = name, rows, thread, token_ndim
        self.calls = 0

    def __call__(self, module: Module, args: Any, output: Any) -> Any:
        if threading.get_ident() != self.thread:
            return None
        self.calls += 1
        if not isinstance(output, Tensor) or output.ndim < 2:
            raise RuntimeError(f"module '{self.name}' did not return a (batch, tokens, ...) tensor")
        if output.ndim == self.token_ndim + 1:  # (batch, ...): one token per row
            edited = self._rows(output.reshape(output.shape[0], 1, *output.shape[1:]))
            return None if edited is None else edited.reshape(output.shape)
        return self._rows(output)

    def _rows(self, output: Tensor) -> Tensor | None:
        edited: Tensor | None = None  # a copy of the output, made at the first edit
        for b, row in self._mapping(int(output.shape[0])):
            if row is None:
                continue
            plan, length, step = row
            first = length - int(output.shape[1])
            for edit in plan.edits.get(self.name, ()):
                chosen = [t for t in range(output.shape[1]) if edit.selects(first + t, plan.prompt_length)]
                if chosen:
                    edited = output.clone() if edited is None else edited
                    edited[b, chosen] = edit.intervention.apply(edited[b, chosen], self.name, edit.label)
            if self.name in plan.captures:
                self._record(plan, output if edited is None else edited, b, first, step)
        return edited

    def _mapping(self, batch: int) -> list[tuple[int, Row]]:
        if batch == len(self.rows) and self.calls == 1:
            return list(enumerate(self.rows))
        if batch == 1 and self.calls <= len(self.rows):  # one forward per sequence, in order
            return [(0, self.rows[self.calls - 1])]
        raise RuntimeError(
            f"module '{self.name}' gave {batch} rows in call {self.calls} for {len(self.rows)} sequences; "
            "per-token edits need one row per sequence"
        )

    def _record(self, plan: SequencePlan, data: Tensor, b: int, first: int, step: int) -> None:
        capture = plan.capture
        assert capture is not None
        positions = [
            first + t
            for t in range(data.shape[1])
            if step_of(first + t, plan.prompt_length) == step
            and capture.positions.selects(first + t, plan.prompt_length)
        ]
        if not positions:
            return
        values = np.array(host_array(data[b, [p - first for p in positions]]))
        if capture.reduce == "stats":
            record = StepCapture(step, tuple(positions), stats=activation_stats(Tensor(values), capture.bins))
        else:
            record = StepCapture(step, tuple(positions), values=values)
        plan.pending[self.name] = record
