"""Warm-up forwards: on the servable's example inputs, or on the samples ``model_warmup`` gives.

Every load, upload and check ends with warm-up forwards
(:func:`~app.runtime.versions.prepare_servable`). Without ``model_warmup`` there is
one, on the servable's example inputs: batch size 1, and for code in the model's folder
every any-size dimension (``-1``) at 1. A model that cannot run at that size (a pooling
layer over a time axis, say) names its warm-up shapes in ``model.json`` as Triton's
model configuration does::

    "model_warmup": [{"name": "one second", "batch_size": 1,
                      "inputs": {"mfcc": {"dims": [40, 100], "zero_data": true}}}]

``dims`` leave out the batch dimension when the model batches (``max_batch_size`` above
0), as Triton's ``dims`` and ``GET /v2/models/{m}/config`` do; otherwise they are the whole
shape. ``zero_data`` (the default) or ``random_data`` fills the tensor; ``data_type``, when
given, must be the input's (``TYPE_FP32``); ``count`` repeats the sample. An input a sample
leaves out takes its example values. Each sample is one warm-up forward (``count`` times).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.errors import UnprocessableError
from app.store.repository import ModelSpec
from app.v2 import triton_type
from models.signature import numpy_dtype

__all__ = [
    "WARMUP_KEY",
    "WarmupBatch",
    "WarmupInput",
    "WarmupSample",
    "warmup_batches",
    "warmup_hint",
    "warmup_samples",
]

WARMUP_KEY = "model_warmup"
_EXAMPLE = '[{"batch_size": 1, "inputs": {"mfcc": {"dims": [40, 100], "zero_data": true}}}]'
_SAMPLE_KEYS = ("batch_size", "count", "inputs", "name")
_INPUT_KEYS = ("data_type", "dims", "random_data", "zero_data")


@dataclass(frozen=True)
class WarmupInput:
    """One input of a warm-up sample: its dims (no batch dimension when batched) and its fill."""

    dims: tuple[int, ...]
    random: bool = False
    data_type: str | None = None


@dataclass(frozen=True)
class WarmupSample:
    """One ``model_warmup`` entry."""

    name: str
    batch_size: int
    count: int
    inputs: dict[str, WarmupInput]


@dataclass(frozen=True)
class WarmupBatch:
    """The inputs of one warm-up forward, and how messages name them."""

    label: str
    inputs: dict[str, np.ndarray]
    count: int = 1

    @property
    def shapes(self) -> str:
        """``mfcc [1, 40, 1]``, for messages."""
        return ", ".join(f"{name} {list(np.shape(array))}" for name, array in self.inputs.items())


def warmup_samples(spec: ModelSpec) -> list[WarmupSample]:
    """The samples of ``model.json``'s ``model_warmup`` (empty: warm up on the example inputs).

    Raises:
        UnprocessableError: ``model_warmup`` is malformed; the message names the key.
    """
    raw = (spec.model_extra or {}).get(WARMUP_KEY)
    if raw is None:
        return []
    if not isinstance(raw, list) or not raw:
        raise UnprocessableError(f"model.json key '{WARMUP_KEY}' must be a list of samples, e.g. {_EXAMPLE}")
    return [_sample(f"{WARMUP_KEY}[{i}]", entry) for i, entry in enumerate(raw)]


def warmup_batches(spec: ModelSpec, servable: Any, batched: bool) -> list[WarmupBatch]:
    """The warm-up forwards of ``servable``: the example inputs, or one per ``model_warmup`` sample.

    Args:
        spec: its ``model.json``.
        servable: the built servable (its ``inputs`` and ``example_inputs``).
        batched: whether the model batches (``dims`` then leave out the batch dimension).

    Raises:
        UnprocessableError: a sample that does not fit the inputs; the message names the key.
    """
    samples = warmup_samples(spec)
    if not samples:
        return [WarmupBatch("the example inputs", dict(servable.example_inputs(1)))]
    return [_batch(f"{WARMUP_KEY}[{i}]", s, servable, batched) for i, s in enumerate(samples)]


def warmup_hint(spec: ModelSpec, servable: Any, batched: bool) -> str:
    """How to give the warm-up other shapes, for a warm-up error ("" when there is nothing to give)."""
    if warmup_samples(spec):
        return f"; change the sample's dims in model.json's '{WARMUP_KEY}' to sizes the model accepts"
    variable = [s for s in servable.inputs if any(d < 0 for d in s.shape[1:])]
    if not variable:
        return ""
    inputs = {s.name: {"dims": _example_dims(s.shape, batched)} for s in variable}
    sample = {"batch_size": 1, "inputs": inputs} if batched else {"inputs": inputs}
    flags = " ".join(f"--warmup-shape {n}:{','.join(map(str, e['dims']))}" for n, e in inputs.items())
    return (
        f"; any-size dimensions (-1) warm up at size 1: give sizes the model accepts in model.json, e.g. "
        f'"{WARMUP_KEY}": [{json.dumps(sample)}] (dims {"without the batch dimension, " if batched else ""}'
        f"as in GET /v2/models/{{m}}/config), or with mininn-serve add-model {flags}"
    )


def _example_dims(shape: tuple[int, ...], batched: bool) -> list[int]:
    """``shape``'s dims for a warm-up example: any size as 100 (an unbatched model's first as 1)."""
    if batched:
        return [100 if d < 0 else d for d in shape[1:]]
    return [(1 if i == 0 else 100) if d < 0 else d for i, d in enumerate(shape)]


def _sample(where: str, raw: Any) -> WarmupSample:
    if not isinstance(raw, Mapping):
        raise UnprocessableError(f"model.json key '{where}' must be an object, e.g. {_EXAMPLE[1:-1]}")
    _known_keys(where, raw, _SAMPLE_KEYS)
    name = raw.get("name", "")
    if not isinstance(name, str):
        raise UnprocessableError(f"model.json key '{where}.name' must be a string")
    batch_size = _positive(f"{where}.batch_size", raw.get("batch_size", 1))
    count = _positive(f"{where}.count", raw.get("count", 1))
    inputs = raw.get("inputs")
    if not isinstance(inputs, Mapping) or not inputs:
        raise UnprocessableError(
            f"model.json key '{where}.inputs' must map input names to their dims, e.g. "
            '{"mfcc": {"dims": [40, 100]}}'
        )
    parsed = {str(k): _input(f"{where}.inputs.{k}", v) for k, v in inputs.items()}
    return WarmupSample(name, batch_size, count, parsed)


def _input(where: str, raw: Any) -> WarmupInput:
    if not isinstance(raw, Mapping):
        raise UnprocessableError(
            f"model.json key '{where}' must be an object such as {{\"dims\": [40, 100]}}"
        )
    if "input_data_file" in raw:
        raise UnprocessableError(
            f"model.json key '{where}.input_data_file' is not supported; use zero_data or random_data"
        )
    _known_keys(where, raw, _INPUT_KEYS)
    dims = raw.get("dims")
    sizes = isinstance(dims, list) and all(isinstance(d, int) and not isinstance(d, bool) for d in dims)
    if not sizes or not all(d > 0 for d in dims):
        raise UnprocessableError(
            f"model.json key '{where}.dims' must be a list of positive sizes, e.g. [40, 100]"
        )
    fills = [key for key in ("zero_data", "random_data") if raw.get(key) is not None]
    if len(fills) > 1 or any(raw[key] is not True for key in fills):
        raise UnprocessableError(f"model.json key '{where}': give one of zero_data or random_data, as true")
    data_type = raw.get("data_type")
    if data_type is not None and not isinstance(data_type, str):
        raise UnprocessableError(f"model.json key '{where}.data_type' must be a string such as TYPE_FP32")
    return WarmupInput(tuple(dims), fills == ["random_data"], data_type)


def _batch(where: str, sample: WarmupSample, servable: Any, batched: bool) -> WarmupBatch:
    specs = {spec.name: spec for spec in servable.inputs}
    unknown = sorted(set(sample.inputs) - set(specs))
    if unknown:
        raise UnprocessableError(
            f"model.json key '{where}.inputs' names {', '.join(map(repr, unknown))}; the model's inputs "
            f"are {', '.join(specs)}"
        )
    batch_size = sample.batch_size if batched else 1
    examples = servable.example_inputs(batch_size)
    rng = np.random.default_rng(0)
    arrays = {}
    for name, spec in specs.items():
        given = sample.inputs.get(name)
        arrays[name] = examples[name] if given is None else _array(f"{where}.inputs.{name}", spec, given,
                                                                     sample.batch_size, batched, rng)
    label = f"{where}" + (f" ({sample.name!r})" if sample.name else "")
    return WarmupBatch(label, arrays, sample.count)


def _array(where: str, spec: Any, given: WarmupInput, batch_size: int, batched: bool,
           rng: np.random.Generator) -> np.ndarray:
    declared = tuple(spec.shape[1:] if batched else spec.shape)
    fits = len(given.dims) == len(declared) and all(d < 0 or d == g for d, g in zip(declared, given.dims))
    if not fits:
        batch = "without the batch dimension, " if batched else ""
        raise UnprocessableError(
            f"model.json key '{where}.dims' is {list(given.dims)}; input {spec.name!r} has dims "
            f"{list(declared)} ({batch}-1: any size, as in GET /v2/models/{{m}}/config)"
        )
    wanted = triton_type(spec.datatype)
    if given.data_type is not None and given.data_type != wanted:
        raise UnprocessableError(
            f"model.json key '{where}.data_type' is {given.data_type}; the input is {wanted}"
        )
    shape = (batch_size, *given.dims) if batched else given.dims
    if spec.datatype == "BYTES":
        return np.full(shape, b"", dtype=object)
    dtype = numpy_dtype(spec.datatype)
    if not given.random:
        return np.zeros(shape, dtype)
    if spec.datatype == "BOOL" or spec.datatype.startswith(("INT", "UINT")):
        return rng.integers(0, 2, shape).astype(dtype)
    return rng.random(shape).astype(dtype)


def _known_keys(where: str, raw: Mapping[str, Any], known: tuple[str, ...]) -> None:
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise UnprocessableError(
            f"model.json key '{where}': unknown key(s) {', '.join(unknown)}; "
            f"accepted keys: {', '.join(known)}"
        )


def _positive(where: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise UnprocessableError(f"model.json key '{where}' must be a positive integer, got {value!r}")
    return value
