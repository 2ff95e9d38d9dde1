"""Per-token edits and captures of a generating sequence: which steps and positions they touch.

A sequence's forward passes are its **steps**: step 0 runs the prompt (the prefill) and gives
the first generated token; step ``s`` runs generated token ``s`` (1-based) and gives token
``s + 1``. A request that generates ``n`` tokens runs steps ``0 .. n-1``. Every **position** of
the sequence (0-based, prompt first) is computed at one step: the prompt's positions at step 0,
generated token ``s`` (at position ``prompt + s - 1``) at step ``s``. A model without a cache
recomputes old positions at every step; an edit still applies to each position as at the step
that first computed it, so both kinds of model see the same edits.

Selectors:

- ``steps``: ``"all"`` (default), ``"prompt"`` (step 0), ``"generated"`` (steps 1 and on), a
  list of step numbers, or ``{"start": a, "stop": b}`` (steps ``a .. b-1``);
- ``positions``: ``"all"`` (default for edits), ``"last"`` (the newest position of each step:
  the prompt's last token, then each generated token; default for captures), or a list of
  positions.

An edit (:class:`TokenEdit`) is an :class:`~mininn.nn.Intervention` on the selected positions'
slices of a module's output ``(batch, tokens, ...)``: its ``index`` picks elements of one
token's slice (``output[row, position]``, e.g. the features of a decoder layer's hidden
state). A steering vector is an ``add`` edit of ``scale * vector``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mininn.nn import ActivationStats, Intervention
from mininn.nn.capture import REDUCTIONS

__all__ = [
    "ALL_POSITIONS",
    "ALL_STEPS",
    "LAST_POSITIONS",
    "Positions",
    "SelectorError",
    "StepCapture",
    "Steps",
    "TokenCapture",
    "TokenEdit",
    "captures_json",
    "parse_positions",
    "parse_steps",
    "step_of",
]

STEP_NAMES = ("all", "prompt", "generated")
POSITION_NAMES = ("all", "last")


class SelectorError(ValueError):
    """A bad ``steps`` or ``positions`` value; ``field`` names it (``steering[0].steps``)."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(f"{field} {detail}")
        self.field = field


def step_of(position: int, prompt_length: int) -> int:
    """The step that computes ``position`` of a sequence whose prompt has ``prompt_length`` tokens."""
    return 0 if position < prompt_length else position - prompt_length + 1


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Steps:
    """Which steps an edit touches (see the module docstring)."""

    kind: str = "all"  # all | prompt | generated | list | range
    values: frozenset[int] = frozenset()
    start: int = 0
    stop: int = 0
    source: Any = "all"

    def selects(self, step: int) -> bool:
        """Whether ``step`` is selected."""
        if self.kind == "all":
            return True
        if self.kind == "prompt":
            return step == 0
        if self.kind == "generated":
            return step > 0
        if self.kind == "list":
            return step in self.values
        return self.start <= step < self.stop

    def check(self, steps: int, label: str) -> None:
        """Refuse steps past the ``steps`` steps (``0 .. steps-1``) the request runs.

        Raises:
            SelectorError: a listed step or the range's end is past the last step.
        """
        last = max(self.values) if self.kind == "list" else self.stop - 1 if self.kind == "range" else -1
        if last >= steps:
            raise SelectorError(
                f"{label}.steps",
                f"{self.source!r} reaches step {last}, but this request runs steps 0 to {steps - 1} "
                f"(step 0 is the prompt, step s gives generated token s+1; max_tokens={steps}): "
                "choose steps below that, or raise max_tokens",
            )


@dataclass(frozen=True)
class Positions:
    """Which positions of the sequence an edit or capture touches (see the module docstring)."""

    kind: str = "all"  # all | last | list
    values: frozenset[int] = frozenset()
    source: Any = "all"

    def selects(self, position: int, prompt_length: int) -> bool:
        """Whether ``position`` is selected."""
        if self.kind == "all":
            return True
        if self.kind == "last":
            return position >= prompt_length - 1
        return position in self.values

    def check(self, positions: int, label: str) -> None:
        """Refuse positions at or past ``positions`` (the most the request computes).

        Raises:
            SelectorError: a listed position is past the last one computed.
        """
        if self.kind == "list" and max(self.values) >= positions:
            raise SelectorError(
                f"{label}.positions",
                f"{self.source!r} reaches position {max(self.values)}, but this request computes "
                f"positions 0 to {positions - 1} (the prompt, then every generated token but the "
                "last): choose positions below that, or raise max_tokens",
            )


ALL_STEPS = Steps()
ALL_POSITIONS = Positions()
LAST_POSITIONS = Positions("last", source="last")


def parse_steps(value: Any, label: str) -> Steps:
    """The :class:`Steps` a wire value means (None: all).

    Raises:
        SelectorError: not one of the forms in the module docstring.
    """
    where = f"{label}.steps"
    if value is None or value == "all":
        return ALL_STEPS
    if value in STEP_NAMES:
        return Steps(value, source=value)
    if isinstance(value, list) and value and all(_is_int(v) and v >= 0 for v in value):
        return Steps("list", frozenset(int(v) for v in value), source=value)
    if isinstance(value, Mapping) and set(value) <= {"start", "stop"} and "stop" in value:
        start, stop = value.get("start", 0), value["stop"]
        if _is_int(start) and _is_int(stop) and 0 <= start < stop:
            return Steps("range", start=int(start), stop=int(stop), source=dict(value))
        raise SelectorError(where, f"range needs integers 0 <= start < stop, got {dict(value)!r}")
    raise SelectorError(
        where,
        f"must be 'all', 'prompt', 'generated', a non-empty list of step numbers (>= 0) or "
        f'{{"start": a, "stop": b}}; got {value!r}',
    )


def parse_positions(value: Any, label: str, default: Positions = ALL_POSITIONS) -> Positions:
    """The :class:`Positions` a wire value means (None: ``default``).

    Raises:
        SelectorError: not ``"all"``, ``"last"`` or a non-empty list of positions (>= 0).
    """
    if value is None:
        return default
    if value == "all":
        return ALL_POSITIONS
    if value == "last":
        return LAST_POSITIONS
    if isinstance(value, list) and value and all(_is_int(v) and v >= 0 for v in value):
        return Positions("list", frozenset(int(v) for v in value), source=value)
    raise SelectorError(
        f"{label}.positions",
        f"must be 'all', 'last' or a non-empty list of token positions (>= 0), got {value!r}",
    )


@dataclass(frozen=True)
class TokenEdit:
    """An intervention on the selected tokens of the modules ``module`` names.

    Attributes:
        module: a module name or glob pattern.
        intervention: the edit of the selected tokens' slices, stacked ``(tokens, ...)``: its
            index starts with ``slice(None)`` (every selected token), then picks within a token.
        steps: the steps it applies at.
        positions: the positions it applies to.
        label: the request field it came from, for messages (``interventions[0]``, ``steering[1]``).
    """

    module: str
    intervention: Intervention
    steps: Steps = ALL_STEPS
    positions: Positions = ALL_POSITIONS
    label: str = "interventions[0]"

    def selects(self, position: int, prompt_length: int) -> bool:
        """Whether the edit touches ``position``."""
        return self.positions.selects(position, prompt_length) and self.steps.selects(
            step_of(position, prompt_length)
        )


@dataclass(frozen=True)
class TokenCapture:
    """What a generation request records at every step.

    Attributes:
        modules: module names or glob patterns.
        positions: the positions recorded (each at the step that computes it); default the newest.
        reduce: ``"none"`` (the values) or ``"stats"`` (:class:`~mininn.nn.ActivationStats`).
        bins: histogram bins for ``"stats"``.
    """

    modules: tuple[str, ...]
    positions: Positions = LAST_POSITIONS
    reduce: str = "none"
    bins: int = 10

    def __post_init__(self) -> None:
        if self.reduce not in REDUCTIONS:
            raise SelectorError("capture.reduce", f"must be one of {', '.join(map(repr, REDUCTIONS))}, "
                                f"got {self.reduce!r}")


@dataclass(frozen=True)
class StepCapture:
    """One module's record at one step.

    Attributes:
        step: the step (0: the prompt; s: generated token s).
        positions: the positions recorded, ascending.
        values: ``(len(positions), ...)`` float array (``reduce="none"``), else None.
        stats: their statistics (``reduce="stats"``), else None.
    """

    step: int
    positions: tuple[int, ...]
    values: np.ndarray | None = None
    stats: ActivationStats | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"step", "positions", "values": [[...]]}``, or ``"stats": {...}`` in place of values."""
        body: dict[str, Any] = {"step": self.step, "positions": list(self.positions)}
        if self.stats is not None:
            body["stats"] = self.stats.to_dict()
        else:
            assert self.values is not None
            body["values"] = np.asarray(self.values, dtype=np.float64).tolist()
        return body


def captures_json(captures: Mapping[str, StepCapture] | None) -> dict[str, list[dict[str, Any]]]:
    """``{module: [entry]}`` of one step's records (:meth:`StepCapture.to_json`); {} for None."""
    return {name: [record.to_json()] for name, record in (captures or {}).items()}


@dataclass
class SequencePlan:
    """A sequence's edits and captures resolved against the model (module names, not patterns).

    Attributes:
        prompt_length: tokens in the prompt.
        edits: module name -> its edits, in request order (interventions, then steering).
        captures: module names recorded at every step.
        capture: the capture request (None: nothing recorded).
        pending: what the hooks recorded during the current step, taken with the step's token.
    """

    prompt_length: int
    edits: dict[str, list[TokenEdit]] = field(default_factory=dict)
    captures: tuple[str, ...] = ()
    capture: TokenCapture | None = None
    pending: dict[str, StepCapture] = field(default_factory=dict)

    @property
    def modules(self) -> set[str]:
        """Every module the plan hooks."""
        return set(self.edits) | set(self.captures)

    def take_captures(self) -> dict[str, StepCapture] | None:
        """The current step's records (None without a capture), emptied for the next step."""
        if self.capture is None:
            return None
        taken, self.pending = self.pending, {}
        return {name: taken[name] for name in self.captures if name in taken}
