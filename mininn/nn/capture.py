"""Activation capture and interventions through forward hooks: :class:`ActivationCapture`.

Usage::

    with nn.ActivationCapture(model, ["layer1.*", "fc"], capture="both") as cap:
        model(x)
    cap.activations["layer1.0.conv1:output"]     # a detached copy
    ablate = nn.Intervention("layer1.0.relu", "zero", index=np.s_[:, 3])
    with nn.ActivationCapture(model, interventions=[ablate]):
        y = model(x)                             # channel 3 of that ReLU's output ablated

Choosing modules. Each entry of ``modules`` is an exact name from
``model.named_modules()`` or, when it holds ``*``, ``?`` or ``[``, a glob
pattern matched with :func:`fnmatch.fnmatchcase` (case-sensitive) against every
name. ``*`` matches any run of characters, dots included: ``"layer1.*"``
matches ``layer1.0`` and ``layer1.0.conv1`` (not ``layer1`` itself), and
``"encoder.layers.*.self_attn"`` matches the attention of every layer. The root
module (named ``""``) is never matched. An unknown exact name raises
:class:`CaptureError` listing the closest names; so does a pattern that matches
nothing.

Names of the captures: ``<module>:output`` and ``<module>:input``.

- An output that is a tuple, list or dict gives one capture per tensor in it,
  suffixed with its position or key (``attn:output.0``, ``attn:output.1``,
  ``head:output.logits``; nested containers add more parts). ``None`` and other
  non-tensors are skipped.
- Inputs are what ``forward`` receives, taken by a forward pre-hook (so before
  an in-place ``forward`` can change them): ``<module>:input`` when the module
  gets exactly one positional argument, ``<module>:input.0``, ``.1``, ... when
  it gets several; tensors passed by keyword are ``<module>:input.<keyword>``.
- A module that runs more than once inside the block (a ReLU reused in a
  residual block) is recorded at every call; the second call's captures end
  in ``@1``, the third's in ``@2``, and so on.

Results follow ``named_modules()`` order; per module, inputs before outputs,
then calls in order. Records are detached copies that later in-place work
cannot change; ``reduce="stats"`` keeps only their :class:`ActivationStats`.

Interventions (:class:`Intervention`) replace a module's output through a
forward hook. They run before the capture hooks on the same module, so a
captured output is the edited one, the tensor the rest of the model saw.
``op`` is ``"zero"``, ``"scale"`` (multiply by ``value``), ``"add"`` or
``"set"``; ``index`` picks the elements it touches, as ``output[index]``
would: None (the whole output), an int, a slice, ``...``, a list of ints, or a
tuple of these (``np.s_[:, 3]``: channel 3 of an ``(N, C, H, W)`` map;
``np.s_[..., 0]``: the last dimension's first position).

``value`` (a number, a nested list, an array or a Tensor) must broadcast to
``output[index]``. The edit is built from tensor operations, so gradients flow
through it. For a module whose output is a tuple, list or dict (nested or not),
``element`` names the tensor edited by the path its capture name uses: ``1`` or
``"1"`` (the second element), ``"1.0"`` or ``[1, 0]`` (``h_n`` of an LSTM's
``(output, (h_n, c_n))``), ``"logits"`` (a dict's key). Without ``element`` a
tuple or list output has its first tensor edited (position 0 at each level); a
dict needs ``element``. A path that names no tensor fails the forward with a
:class:`CaptureError` listing the paths that do.

Isolation. The hooks live for the ``with`` block and are removed on exit, also
when ``forward`` raises. They act only where their capture is active in the
current :mod:`contextvars` context, which entering the block sets in the calling
thread alone: another thread running the same model meanwhile passes through
hooks that do nothing for it. So the capture's forward must run in the thread
that entered the block, and a caller that batches requests must never batch a
capture request's forward with others. With no capture active the hook
dictionaries are empty and ``Module.__call__`` keeps its fast path.
"""

from __future__ import annotations

import difflib
import fnmatch
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import numpy as np

from mininn._backend import array_module
from mininn._functions.elementwise import where
from mininn.nn._output_paths import first_position_path, flatten, replaced, step
from mininn.nn.modules.module import Module
from mininn.tensor import Tensor
from mininn.utils.hooks import RemovableHandle

__all__ = [
    "CAPTURE_MODES",
    "INTERVENTION_OPS",
    "REDUCTIONS",
    "ActivationCapture",
    "ActivationStats",
    "CaptureError",
    "CaptureLimitError",
    "Intervention",
    "activation_stats",
    "match_modules",
]

CAPTURE_MODES = ("output", "input", "both")
REDUCTIONS = ("none", "stats")
INTERVENTION_OPS = ("zero", "scale", "add", "set")
MAX_BINS = 10_000

# The ids of the captures active in the current context (thread, task).
_ACTIVE: ContextVar[frozenset[int]] = ContextVar("mininn_active_captures", default=frozenset())
_ids = itertools.count()
_PATTERN_CHARS = frozenset("*?[")


class CaptureError(ValueError):
    """A bad capture or intervention argument; ``field`` names it (``"modules"``,
    ``"interventions[1].index"``) and the message starts with it."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(f"{field} {detail}")
        self.field = field
        self.detail = detail

    def prefixed(self, prefix: str) -> CaptureError:
        """The same error with ``prefix`` put before the field name."""
        return CaptureError(prefix + self.field, self.detail)


class CaptureLimitError(CaptureError):
    """The captures add up to more elements than ``max_elements``."""

    def __init__(self, total: int, limit: int) -> None:
        super().__init__(
            "captures",
            f"would return {total} elements, over the limit of {limit}; "
            "capture fewer modules, a smaller batch, or reduce='stats'",
        )
        self.total = total
        self.limit = limit


# ---- choosing modules ----------------------------------------------------------------------
def _is_pattern(name: str) -> bool:
    return not _PATTERN_CHARS.isdisjoint(name)


def _quoted(names: Iterable[str]) -> str:
    return ", ".join(f"'{name}'" for name in names)


def match_modules(
    model: Module, modules: str | Iterable[str], *, field: str = "modules"
) -> list[tuple[str, Module]]:
    """The submodules of ``model`` named by ``modules``, in ``named_modules()`` order.

    Args:
        model: The model whose ``named_modules()`` are searched.
        modules: Exact names and glob patterns (see the module docstring); a
            string is one name or pattern.
        field: The argument's name in error messages.

    Raises:
        CaptureError: An entry is not a non-empty string, an exact name is not a
            submodule (the closest names are listed), or a pattern matches nothing.
    """
    entries = [modules] if isinstance(modules, str) else list(modules)
    named = [(name, module) for name, module in model.named_modules() if name]
    names = [name for name, _ in named]
    wanted: set[str] = set()
    for position, entry in enumerate(entries):
        wanted.update(_resolve(entry, names, f"{field}[{position}]"))
    return [(name, module) for name, module in named if name in wanted]


def _resolve(entry: Any, names: list[str], field: str) -> list[str]:
    if not isinstance(entry, str) or not entry:
        raise CaptureError(field, f"must be a non-empty module name or pattern, got {entry!r}")
    if _is_pattern(entry):
        found = [name for name in names if fnmatch.fnmatchcase(name, entry)]
        if not found:
            raise CaptureError(field, f"pattern '{entry}' matches no module; {_top_level(names)}")
        return found
    if entry not in names:
        close = difflib.get_close_matches(entry, names, n=5)
        hint = f"closest names: {_quoted(close)}" if close else _top_level(names)
        raise CaptureError(field, f"'{entry}' is not a module of the model; {hint}")
    return [entry]


def _top_level(names: list[str]) -> str:
    top = [name for name in names if "." not in name]
    return f"the model's top-level modules are {_quoted(top)}" if top else "the model has no submodules"


# ---- statistics ----------------------------------------------------------------------------
@dataclass(frozen=True)
class ActivationStats:
    """Summary statistics of one captured tensor (computed in float64).

    Attributes:
        shape: The tensor's shape.
        mean: Mean of all elements.
        std: Population standard deviation (``torch.std(x, correction=0)``).
        min: Smallest element.
        max: Largest element.
        l2_norm: Euclidean norm of all elements.
        zero_fraction: Fraction of elements equal to zero.
        histogram: ``bins`` counts over ``[min, max]`` in equal-width bins, as
            ``torch.histc(x, bins)`` (finite elements only; a constant tensor
            spans ``[v - 1, v + 1]``).
        bin_edges: The ``bins + 1`` edges of the histogram.

    The float fields are NaN for an empty tensor.
    """

    shape: tuple[int, ...]
    mean: float
    std: float
    min: float
    max: float
    l2_norm: float
    zero_fraction: float
    histogram: tuple[int, ...]
    bin_edges: tuple[float, ...]

    @property
    def size(self) -> int:
        """How many numbers the statistics hold (what a capture limit counts)."""
        return 6 + len(self.histogram) + len(self.bin_edges)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; non-finite floats become ``None``."""

        def clean(value: float) -> float | None:
            return value if math.isfinite(value) else None

        return {
            "shape": list(self.shape),
            "mean": clean(self.mean),
            "std": clean(self.std),
            "min": clean(self.min),
            "max": clean(self.max),
            "l2_norm": clean(self.l2_norm),
            "zero_fraction": clean(self.zero_fraction),
            "histogram": list(self.histogram),
            "bin_edges": [clean(edge) for edge in self.bin_edges],
        }


def activation_stats(tensor: Tensor, bins: int = 10) -> ActivationStats:
    """The :class:`ActivationStats` of ``tensor`` with a ``bins``-bin histogram."""
    xp = array_module(tensor.device)
    data = tensor._data
    shape = tuple(int(d) for d in data.shape)
    if data.size == 0:
        nan = float("nan")
        edges = tuple(float(e) for e in np.linspace(-1.0, 1.0, bins + 1))
        return ActivationStats(shape, nan, nan, nan, nan, 0.0, nan, (0,) * bins, edges)
    with np.errstate(invalid="ignore", over="ignore"):  # inf and NaN give NaN statistics
        return _stats(xp, data, shape, bins)


def _stats(xp: Any, data: Any, shape: tuple[int, ...], bins: int) -> ActivationStats:
    # One float64 copy and one scratch buffer: the statistics of every layer of a
    # network are computed on the inference thread, so passes over the data count.
    x = data.astype(xp.float64).ravel()
    low, high = float(data.min()), float(data.max())
    mean = float(x.sum()) / x.size
    scratch = xp.subtract(x, mean)
    variance = float(xp.dot(scratch, scratch)) / x.size
    counts, edges = _histogram(xp, x, scratch, bins, low, high)
    return ActivationStats(
        shape=shape,
        mean=mean,
        std=math.sqrt(variance),
        min=low,
        max=high,
        l2_norm=math.sqrt(float(xp.dot(x, x))),
        zero_fraction=float(xp.count_nonzero(data == 0)) / x.size,
        histogram=tuple(int(c) for c in counts.tolist()),
        bin_edges=tuple(float(e) for e in edges.tolist()),
    )


def _histogram(xp: Any, x: Any, scratch: Any, bins: int, low: float, high: float) -> tuple[Any, Any]:
    """torch.histc's counts over the finite elements of ``x`` (``low``/``high``: its min and max)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        x = x[xp.isfinite(x)]
        scratch = xp.empty_like(x)
        low = float(x.min()) if x.size else 0.0
        high = float(x.max()) if x.size else 0.0
    if low == high:
        low, high = low - 1.0, high + 1.0
    position = xp.subtract(x, low, out=scratch)  # torch's order: (x - low) * bins / (high - low)
    position *= bins
    position /= high - low
    index = position.astype(xp.intp)
    xp.minimum(index, bins - 1, out=index)
    counts = xp.bincount(index, minlength=bins)
    edges = low + (high - low) * xp.arange(bins + 1, dtype=xp.float64) / bins
    return counts, edges


# ---- interventions -------------------------------------------------------------------------
def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _is_index_item(item: Any) -> bool:
    if isinstance(item, list):
        return bool(item) and all(_is_int(i) for i in item)
    return _is_int(item) or isinstance(item, slice) or item is Ellipsis


def _index_key(index: Any) -> tuple[Any, ...] | None:
    """``index`` as a NumPy index tuple (None: the whole output)."""
    if index is None:
        return None
    if isinstance(index, tuple) and all(_is_index_item(i) for i in index):
        return index
    if _is_index_item(index):
        return (index,)
    raise CaptureError(
        "index",
        f"must be what output[index] takes: an int, a slice, '...', a non-empty list of ints "
        f"or a tuple of them, got {index!r}",
    )


def _value_array(op: str, value: Any) -> Any:
    if op == "zero":
        if value is not None:
            raise CaptureError("value", f"is not used by op 'zero'; leave it out (got {value!r})")
        return None
    if value is None:
        raise CaptureError("value", f"is required by op '{op}'")
    if isinstance(value, Tensor):
        return value.detach()._data
    if isinstance(value, bool) or isinstance(value, (str, bytes)):
        raise CaptureError("value", f"must be a number or a (nested) list of numbers, got {value!r}")
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise CaptureError(
            "value", f"must be a number or a (nested) list of numbers, got {value!r}"
        ) from None
    return array


_MAX_PATHS = 20  # element paths listed in a message


def _element_path(element: Any) -> tuple[int | str, ...] | None:
    """``element`` as a path of positions and keys (None: the default)."""
    if element is None:
        return None
    if _is_int(element):
        return (int(element),)
    if isinstance(element, str) and element and all(element.split(".")):
        return tuple(element.split("."))
    if isinstance(element, (list, tuple)) and element:
        if all(_is_int(p) or (isinstance(p, str) and p) for p in element):
            return tuple(int(p) if _is_int(p) else p for p in element)
    raise CaptureError(
        "element",
        f"must be a position, a key, or a path to a tensor inside the output as capture names "
        f"write it ('1.0' or [1, 0]), got {element!r}",
    )


@dataclass(frozen=True)
class Intervention:
    """An edit of one module's output during the forward (see the module docstring).

    Args:
        module: The module's name, or a glob pattern (the edit applies to each match).
        op: ``"zero"``, ``"scale"``, ``"add"`` or ``"set"``.
        value: The factor, addend or new value: a number, a (nested) list of
            numbers, an array or a Tensor (not used by ``"zero"``); broadcast
            to ``output[index]``.
        index: The elements edited, as ``output[index]`` takes them: None (all),
            an int, a slice, ``...``, a list of ints, or a tuple of these
            (``np.s_[:, [0, 2]]``: channels 0 and 2).
        element: Which tensor of a tuple, list or dict output is edited: a
            position, a key, or a path through nested ones as in capture names
            (``"1.0"`` or ``[1, 0]``). Default: position 0 at each level.

    Raises:
        CaptureError: A bad ``module``, ``op``, ``value``, ``index`` or ``element``,
            naming the argument.
    """

    module: str
    op: str
    value: Any = None
    index: Any = None
    element: int | str | Sequence[int | str] | None = None
    _key: tuple[Any, ...] | None = field(init=False, repr=False, compare=False, default=None)
    _value: Any = field(init=False, repr=False, compare=False, default=None)
    _path: tuple[int | str, ...] | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        if not isinstance(self.module, str) or not self.module:
            raise CaptureError("module", f"must be a non-empty module name or pattern, got {self.module!r}")
        if self.op not in INTERVENTION_OPS:
            raise CaptureError("op", f"must be one of {_quoted(INTERVENTION_OPS)}, got {self.op!r}")
        object.__setattr__(self, "_path", _element_path(self.element))
        object.__setattr__(self, "_value", _value_array(self.op, self.value))
        object.__setattr__(self, "_key", _index_key(self.index))

    def apply(self, output: Any, module_name: str, label: str = "intervention") -> Any:
        """``output`` with the edit made (a new object; ``output`` is not changed).

        Raises:
            CaptureError: ``element`` names no tensor of the output, or ``index`` or
                ``value`` do not fit that tensor.
        """
        if isinstance(output, Tensor) and self._path is None:
            return self._edit(output, module_name, label)
        if not isinstance(output, (Tensor, tuple, list, Mapping)):
            raise CaptureError(
                f"{label}.module", f"'{module_name}' returned {type(output).__name__}, not a tensor to edit"
            )
        path = self._path if self._path is not None else first_position_path(output)
        return self._edit_at(output, path, output, module_name, label)

    def _edit_at(self, value: Any, path: tuple[Any, ...], output: Any, module_name: str, label: str) -> Any:
        """``value`` with the tensor at ``path`` (inside it) edited; ``output``: the whole, for messages."""
        if not path:
            if not isinstance(value, Tensor):
                raise self._no_such_element(output, module_name, label)
            return self._edit(value, module_name, label)
        found = step(value, path)
        if found is None:
            raise self._no_such_element(output, module_name, label)
        key, rest = found
        return replaced(value, key, self._edit_at(value[key], rest, output, module_name, label))

    def _no_such_element(self, output: Any, module_name: str, label: str) -> CaptureError:
        paths = [suffix[1:] for suffix, _ in flatten(output, "")]
        if isinstance(output, Tensor):
            return CaptureError(
                f"{label}.element", f"is for tuple, list or dict outputs; '{module_name}' returns a "
                f"tensor, so leave element out (got {self.element!r})"
            )
        shown = _quoted(paths[:_MAX_PATHS]) + (", ..." if len(paths) > _MAX_PATHS else "")
        wanted = "is required" if self.element is None else f"{self.element!r} names no tensor"
        return CaptureError(
            f"{label}.element",
            f"{wanted} in the {type(output).__name__} output of '{module_name}'; "
            f"its tensors are at {shown or 'no path (it holds none)'}",
        )

    def _edit(self, output: Tensor, module_name: str, label: str) -> Tensor:
        xp = array_module(output.device)
        data = output._data
        key = (Ellipsis,) if self._key is None else self._key
        mask = xp.zeros(data.shape, dtype=bool)
        try:
            mask[key] = True
        except (IndexError, TypeError, ValueError) as exc:
            raise CaptureError(
                f"{label}.index",
                f"{self.index!r} does not fit the output of '{module_name}' "
                f"with shape {list(data.shape)}: {exc}",
            ) from None
        if self.op == "zero":
            return where(Tensor(mask), Tensor(xp.zeros((), dtype=data.dtype)), output)
        fill = 1 if self.op == "scale" else 0
        full = xp.full(data.shape, fill, dtype=data.dtype)
        try:
            full[key] = xp.asarray(self._value, dtype=data.dtype)
        except ValueError:
            raise CaptureError(
                f"{label}.value",
                f"of shape {list(np.shape(self._value))} does not broadcast to "
                f"the {list(data[key].shape)} elements of '{module_name}' that index selects",
            ) from None
        if self.op == "scale":
            return output * Tensor(full)
        if self.op == "add":
            return output + Tensor(full)
        return where(Tensor(mask), Tensor(full), output)


# ---- the capture ---------------------------------------------------------------------------
def _choice(field_name: str, value: Any, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise CaptureError(field_name, f"must be one of {_quoted(allowed)}, got {value!r}")
    return value


class ActivationCapture:
    """Record (and edit) module activations for the forward passes inside a ``with`` block.

    Args:
        model: The model; ``modules`` are searched in its ``named_modules()``.
        modules: Names or glob patterns of the modules to record (see the module
            docstring); may be empty when only intervening.
        capture: ``"output"`` (default), ``"input"`` or ``"both"``.
        reduce: ``"none"`` keeps detached copies of the tensors (``activations``);
            ``"stats"`` keeps only :class:`ActivationStats` (``stats``).
        bins: Histogram bins for ``reduce="stats"`` (1 to 10000). Default: 10.
        interventions: :class:`Intervention` objects, applied in order (an
            iterable, read once, after the other arguments are checked).
        max_elements: Most numbers the captures may hold in all (tensor elements,
            or :attr:`ActivationStats.size` each); past it the records are
            dropped and leaving the block raises :class:`CaptureLimitError`.

    Raises:
        CaptureError: A bad argument, naming it, before any hook is registered.
    """

    def __init__(
        self,
        model: Module,
        modules: str | Iterable[str] = (),
        *,
        capture: str = "output",
        reduce: str | None = "none",
        bins: int = 10,
        interventions: Iterable[Intervention] = (),
        max_elements: int | None = None,
    ) -> None:
        self.model = model
        self.capture = _choice("capture", capture, CAPTURE_MODES)
        self.reduce = _choice("reduce", "none" if reduce is None else reduce, REDUCTIONS)
        if not _is_int(bins) or not 1 <= bins <= MAX_BINS:
            raise CaptureError("bins", f"must be an integer from 1 to {MAX_BINS}, got {bins!r}")
        if max_elements is not None and (not _is_int(max_elements) or max_elements < 0):
            raise CaptureError("max_elements", f"must be a non-negative integer, got {max_elements!r}")
        self.bins = int(bins)
        self.max_elements = max_elements
        self.targets = match_modules(model, modules)
        self.interventions = _interventions(interventions)
        self._edits = [
            (name, module, iv, f"interventions[{i}]")
            for i, iv in enumerate(self.interventions)
            for name, module in _match_intervention(model, iv, i)
        ]
        self._order = {name: i for i, (name, _) in enumerate(model.named_modules()) if name}
        self._id = next(_ids)
        self._handles: list[RemovableHandle] = []
        self._token: Token[frozenset[int]] | None = None
        self._records: list[tuple[tuple[int, int, int, int], str, Any]] = []
        self._calls: dict[tuple[str, str], int] = {}
        self.total_elements = 0
        self.over_limit = False

    @property
    def module_names(self) -> list[str]:
        """The names of the recorded modules, in ``named_modules()`` order."""
        return [name for name, _ in self.targets]

    @property
    def results(self) -> dict[str, Any]:
        """Capture name -> Tensor (``reduce="none"``) or ActivationStats, in order."""
        return {name: value for _, name, value in sorted(self._records, key=lambda r: r[0])}

    @property
    def activations(self) -> dict[str, Tensor]:
        """Capture name -> detached copy (empty with ``reduce="stats"``)."""
        return self.results if self.reduce == "none" else {}

    @property
    def stats(self) -> dict[str, ActivationStats]:
        """Capture name -> statistics (empty with ``reduce="none"``)."""
        return self.results if self.reduce == "stats" else {}

    def __enter__(self) -> ActivationCapture:
        if self._token is not None:
            raise RuntimeError("this ActivationCapture is already active; it cannot be entered twice")
        try:
            self._register()
        except BaseException:
            self._remove()
            raise
        self._token = _ACTIVE.set(_ACTIVE.get() | {self._id})
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._remove()
        if self._token is not None:
            _ACTIVE.reset(self._token)
            self._token = None
        if exc_type is None and self.over_limit:
            assert self.max_elements is not None
            raise CaptureLimitError(self.total_elements, self.max_elements)

    # ---- hooks ---------------------------------------------------------------------------
    def _register(self) -> None:
        for name, module, iv, label in self._edits:
            self._handles.append(module.register_forward_hook(self._edit_hook(name, iv, label)))
        for name, module in self.targets:
            if self.capture in ("input", "both"):
                hook = self._input_hook(name)
                self._handles.append(module.register_forward_pre_hook(hook, with_kwargs=True))
            if self.capture in ("output", "both"):
                self._handles.append(module.register_forward_hook(self._output_hook(name)))

    def _remove(self) -> None:
        while self._handles:
            self._handles.pop().remove()

    # The hooks take ``*rest`` so they work with and without the with_kwargs form.
    def _edit_hook(self, name: str, iv: Intervention, label: str) -> Any:
        def hook(module: Module, *rest: Any) -> Any:
            if self._id not in _ACTIVE.get():
                return None
            return iv.apply(rest[-1], name, label)

        return hook

    def _input_hook(self, name: str) -> Any:
        def hook(module: Module, args: tuple[Any, ...], kwargs: Mapping[str, Any] | None = None) -> None:
            if self._id not in _ACTIVE.get():
                return
            entries = flatten(args[0], "") if len(args) == 1 else flatten(tuple(args), "")
            entries += flatten(dict(kwargs or {}), "")
            self._record(name, 0, entries)

        return hook

    def _output_hook(self, name: str) -> Any:
        def hook(module: Module, *rest: Any) -> None:
            if self._id in _ACTIVE.get():
                self._record(name, 1, flatten(rest[-1], ""))

        return hook

    def _record(self, name: str, kind: int, entries: list[tuple[str, Tensor]]) -> None:
        label = ("input", "output")[kind]
        call = self._calls.get((name, label), 0)
        self._calls[name, label] = call + 1
        at = f"@{call}" if call else ""
        order = self._order[name]
        for seq, (suffix, tensor) in enumerate(entries):
            value: Any = None
            if self.reduce == "stats":
                value = activation_stats(tensor, self.bins)
                size = value.size
            else:
                size = tensor.numel()
            self.total_elements += size
            if self.max_elements is not None and self.total_elements > self.max_elements:
                self.over_limit = True
                self._records.clear()
            if self.over_limit:
                continue
            if value is None:
                value = Tensor(tensor._data.copy())
            self._records.append(((order, kind, call, seq), f"{name}:{label}{suffix}{at}", value))


def _interventions(items: Iterable[Intervention]) -> tuple[Intervention, ...]:
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        raise CaptureError("interventions", f"must be a list of interventions, got {items!r}")
    result = tuple(items)
    for i, item in enumerate(result):
        if not isinstance(item, Intervention):
            raise CaptureError(f"interventions[{i}]", f"must be an Intervention, got {item!r}")
    return result


def _match_intervention(model: Module, iv: Intervention, position: int) -> list[tuple[str, Module]]:
    try:
        return match_modules(model, [iv.module], field="module")
    except CaptureError as exc:
        raise CaptureError(f"interventions[{position}].module", exc.detail) from None
