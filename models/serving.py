"""Servable: one architecture's module with its pre- and post-processing.

The service builds a servable with :func:`servable`, loads a state dict into
``servable.module``, moves it to its device and dtype, calls ``eval()``, and then calls
:meth:`Servable.predict` inside ``mininn.no_grad()`` for each (batched) request.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

import mininn
from mininn.nn import Module
from models.errors import InputError
from models.processing import Processor
from models.registry import Architecture, get_architecture
from models.signature import DATATYPES, TensorSpec, numpy_dtype

__all__ = ["Servable", "placement", "servable", "to_host", "to_tensor"]


class Servable:
    """A module plus the processing that turns V2 tensors into its inputs and outputs.

    Attributes:
        architecture: The architecture name.
        config: The validated config dataclass.
        module: The mininn module (randomly initialised until weights are loaded).
        inputs: The V2 input specs, batch dimension first.
        outputs: The V2 output specs, batch dimension first.
        batchable: Whether requests may be stacked along the first dimension.
        generator: The ``TextGenerator`` of a text-generation model (``models.causal_lm``, the
            llama architecture); None for other models.
    """

    def __init__(self, architecture: Architecture, config: Any, module: Module, processor: Processor) -> None:
        self.architecture: str = architecture.name
        self.config = config
        self.module = module
        self.processor = processor
        self.inputs: list[TensorSpec] = list(processor.signature.inputs)
        self.outputs: list[TensorSpec] = list(processor.signature.outputs)
        self.batchable: bool = architecture.batchable
        self.generator: Any = architecture.generator(self) if architecture.generator is not None else None

    def predict(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run one batch: preprocess, ``self.module(...)``, postprocess.

        Does not switch off autograd: callers wrap the call in ``mininn.no_grad()``.

        Args:
            inputs: One array per input name, batch dimension first; ``BYTES`` inputs are
                NumPy object arrays of ``bytes``.

        Returns:
            One host array per output name, batch dimension first, of the declared datatype.

        Raises:
            InputError: A missing or unexpected input name, or a wrong datatype or shape.
        """
        self._check(inputs)
        arguments = self.processor.preprocess(inputs)
        device, float_dtype = placement(self.module)
        result = self.module(*(to_tensor(a, device, float_dtype) for a in arguments))
        outputs = self.processor.postprocess(_to_host(result))
        return {spec.name: _as_declared(outputs[spec.name], spec) for spec in self.outputs}

    def example_inputs(self, batch_size: int = 1) -> dict[str, np.ndarray]:
        """A valid, deterministic batch of ``batch_size`` inputs, for warm-up and tests."""
        return self.processor.example_inputs(batch_size)

    def _check(self, inputs: Mapping[str, np.ndarray]) -> None:
        names = [spec.name for spec in self.inputs]
        for name in inputs:
            if name not in names:
                raise InputError(f"unexpected input {name!r}; expected inputs: {', '.join(names)}")
        for spec in self.inputs:
            if spec.name not in inputs:
                raise InputError(f"missing input {spec.name!r}; expected inputs: {', '.join(names)}")
            _check_input(spec, np.asarray(inputs[spec.name]))
        batch_sizes = {np.shape(inputs[name])[0] for name in names if np.ndim(inputs[name]) > 0}
        if len(batch_sizes) > 1:
            raise InputError(f"inputs have different batch sizes {sorted(batch_sizes)}")

    def __repr__(self) -> str:
        return f"Servable(architecture={self.architecture!r}, config={self.config!r})"


def servable(
    name: str, config: Mapping[str, Any] | None = None, *, resource_dir: Path | None = None
) -> Servable:
    """Build architecture ``name`` with ``config`` and its processing.

    Args:
        name: A registered architecture name.
        config: Config keys and values (as in ``model.json``); missing keys take defaults.
        resource_dir: The model's folder, where resource files named in the config
            (such as ``tokenizer.json``) are found.

    Raises:
        ArchitectureError: Unknown name, bad config, or a missing resource file.
    """
    architecture = get_architecture(name)
    cfg = architecture.make_config(config)
    processor = architecture.processor(cfg, architecture.signature(cfg), resource_dir)
    return Servable(architecture, cfg, architecture.build(cfg), processor)


_V2_NAMES = {dtype: name for name, dtype in DATATYPES.items()}


def _check_input(spec: TensorSpec, array: np.ndarray) -> None:
    kind = array.dtype.kind
    expected = spec.datatype
    ok = {
        "BYTES": kind in "OSU",
        "BOOL": kind == "b",
    }.get(expected, kind in ("iu" if expected.startswith("INT") else "iuf"))
    if not ok:
        got = _V2_NAMES.get(array.dtype, str(array.dtype))
        raise InputError(f"input {spec.name!r} has datatype {got}; expected {expected}")
    fits = array.ndim == len(spec.shape) and all(
        want < 0 or want == got for want, got in zip(spec.shape, array.shape)
    )
    if not fits:
        raise InputError(
            f"input {spec.name!r} has shape {list(array.shape)}; expected {list(spec.shape)}"
        )


def _as_declared(array: np.ndarray, spec: TensorSpec) -> np.ndarray:
    return np.asarray(array, dtype=numpy_dtype(spec.datatype))


def placement(module: Module) -> tuple[mininn.device, mininn.dtype | None]:
    """The device and floating dtype of the module's first floating parameter or buffer."""
    for tensor in itertools.chain(module.parameters(), module.buffers()):
        if tensor.is_floating_point():
            return tensor.device, tensor.dtype
    return mininn.device("cpu"), None


def to_tensor(array: np.ndarray, device: mininn.device, float_dtype: mininn.dtype | None) -> mininn.Tensor:
    dtype = float_dtype if array.dtype.kind == "f" and float_dtype is not None else None
    return mininn.as_tensor(array, dtype=dtype, device=device)


def to_host(tensor: Any) -> np.ndarray:
    """A result tensor as a host NumPy array (plain values pass through ``np.asarray``)."""
    if hasattr(tensor, "detach"):
        return tensor.detach().cpu().numpy()
    return np.asarray(tensor)


def _to_host(result: Any) -> list[np.ndarray] | dict[str, np.ndarray]:
    """A forward's result as host arrays: a dict stays a dict, a tuple becomes a list (no ``None``)."""
    if isinstance(result, dict):
        return {str(k): to_host(v) for k, v in result.items() if v is not None}
    results = result if isinstance(result, (tuple, list)) else (result,)
    return [to_host(r) for r in results if r is not None]
