"""Models whose code lives in their own folder: ``model.json`` names a class or factory in ``model.py``.

::

    {"module": "model.py:Net", "init": {"num_classes": 10},
     "inputs": [{"name": "image", "datatype": "FP32", "shape": [-1, 3, 32, 32]}],
     "outputs": [{"name": "logits", "datatype": "FP32", "shape": [-1, 10]}]}

``module`` is ``<file>.py:<name>``: a ``Module`` subclass or a function returning a
module, called with ``init`` as keyword arguments. The file is imported with
:func:`mininn.torch_alias.load_code`, so code written for torch runs unchanged.
``inputs`` map in order to ``forward``'s positional arguments; a name left out
defaults to that parameter's name. A tensor result is one output, a tuple one
output per element (a ``None`` element is left out) and a dict one per key.
Without ``outputs`` they are found by the first forward (the warm-up):
``output`` for one tensor, ``output__0``, ``output__1``, ... for a tuple, the
keys for a dict, with each datatype and shape as the forward gave them (a
dimension that follows a variable input dimension is ``-1``).

Any failure of the user's code raises :class:`ModelCodeError` naming the file
and line (``model.py:14: torch.nn.LSTM is not available in mininn``).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mininn import no_grad
from mininn.nn import Module
from mininn.torch_alias import code_location, load_code
from models.errors import ArchitectureError, InputError
from models.processing import Processor
from models.registry import Architecture
from models.serving import Servable, placement, to_host, to_tensor
from models.signature import DATATYPES, Signature, TensorSpec

__all__ = ["CodeSpec", "ModelCodeError", "build_code_module", "code_servable", "describe_error",
           "located", "parse_module_ref"]

_REF = re.compile(r"(?P<file>[A-Za-z_][A-Za-z0-9_]*\.py):(?P<name>[A-Za-z_][A-Za-z0-9_]*)")
_NUMPY_TO_V2 = {dtype: name for name, dtype in DATATYPES.items() if name != "BYTES"}


class ModelCodeError(ArchitectureError):
    """The model folder's code could not be imported, built or run; the message names file and line."""


@dataclass(frozen=True)
class CodeSpec:
    """The code half of a ``model.json``.

    Attributes:
        module: ``"<file>.py:<name>"``, a class or factory function in the model's folder.
        init: keyword arguments for it.
        inputs: ``{"name"?, "datatype", "shape"}`` per positional argument of ``forward``.
        outputs: ``{"name", "datatype", "shape"}`` per output; None: found by the warm-up.
        task: ``"text-generation"`` for a causal language model (``forward(input_ids) -> logits``,
            :mod:`models.causal_lm`); None: tensors in, tensors out.
        context_length: a text-generation model's longest sequence (prompt and generated tokens);
            None: the model's ``block_size`` or ``max_position_embeddings``.
    """

    module: str
    init: Mapping[str, Any] = field(default_factory=dict)
    inputs: Sequence[Mapping[str, Any]] = ()
    outputs: Sequence[Mapping[str, Any]] | None = None
    task: str | None = None
    context_length: int | None = None


def parse_module_ref(ref: str) -> tuple[str, str]:
    """``("model.py", "Net")`` for ``"model.py:Net"``.

    Raises:
        ArchitectureError: not of the form ``<file>.py:<name>``.
    """
    match = _REF.fullmatch(ref) if isinstance(ref, str) else None
    if match is None:
        raise ArchitectureError(
            f"module {ref!r} must be '<file>.py:<name>', a class or factory function in a Python "
            "file of the model's folder, e.g. 'model.py:Net'"
        )
    return match["file"], match["name"]


def code_servable(folder: Path, spec: CodeSpec) -> Servable:
    """Import the folder's code, build the module with ``spec.init``, and wrap it for serving.

    A spec with a ``task`` is for :func:`models.causal_lm.causal_lm_servable` instead.

    Raises:
        ModelCodeError: the code fails to import or to build the module.
        ArchitectureError: a bad ``module``, ``inputs`` or ``outputs`` entry, or a ``task``.
    """
    folder = Path(folder)
    if spec.task is not None:
        raise ArchitectureError(
            f"task {spec.task!r}: build it with models.causal_lm.causal_lm_servable, not code_servable"
        )
    module = build_code_module(folder, spec)
    signature = Signature(_input_specs(spec.inputs, module), _output_specs(spec.outputs))
    architecture = Architecture(
        name=spec.module,
        config_cls=dict,
        build=lambda _: module,
        signature=lambda _: signature,
        processor=CodeProcessor,
    )
    return CodeServable(architecture, dict(spec.init), module, CodeProcessor(None, signature), folder)


def build_code_module(folder: Path, spec: CodeSpec) -> Module:
    """Import ``spec.module``'s file from ``folder`` and build the module with ``spec.init``.

    Raises:
        ModelCodeError: the code fails to import or to build the module (naming file and line).
        ArchitectureError: a bad ``module`` reference, or a factory that returns no ``Module``.
    """
    folder = Path(folder)
    filename, name = parse_module_ref(spec.module)
    if not (folder / filename).is_file():
        raise ArchitectureError(
            f"module {spec.module!r}: the model's folder has no {filename}; put the file there "
            "(mininn-serve add-model copies it) or name the file that holds the class"
        )
    with located(folder):
        code = load_code(folder, filename)
    factory = getattr(code, name, None)
    if not callable(factory):
        found = sorted(k for k, v in vars(code).items() if isinstance(v, type) and issubclass(v, Module))
        raise ArchitectureError(
            f"module {spec.module!r}: {filename} defines no class or function {name!r}; "
            f"its nn.Module classes: {', '.join(found) or 'none'}"
        )
    with located(folder):
        module = factory(**dict(spec.init))
    if not isinstance(module, Module):
        raise ArchitectureError(
            f"module {spec.module!r} returned {type(module).__name__}, not an nn.Module; name a Module "
            "class or a function that returns one"
        )
    return module


class CodeServable(Servable):
    """A servable of user code: errors of its forward name the file and line."""

    def __init__(self, architecture: Architecture, config: Any, module: Module, processor: Processor,
                 folder: Path) -> None:
        super().__init__(architecture, config, module, processor)
        self.folder = folder
        self.outputs_declared = bool(self.outputs)

    def predict(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        if not self.outputs:
            self._discover_outputs()
        try:
            return super().predict(inputs)
        except InputError:
            raise
        except Exception as exc:  # the model's own code failed on these inputs
            raise InputError(describe_error(exc, self.folder)) from exc

    def _discover_outputs(self) -> None:
        """Name and describe the outputs from forwards on example inputs (batch 1, then 2)."""
        with located(self.folder):
            first = self.processor.results(self._forward(self.example_inputs(1)))
        try:
            second = self.processor.results(self._forward(self.processor.example_inputs(2, variable=2)))
        except Exception:  # noqa: BLE001 - fixed-size inputs: only the batch dimension varies
            second = None
        specs = []
        for key, value in first.items():
            other = None if second is None else second.get(key)
            shape = [-1, *value.shape[1:]] if value.ndim else []
            if other is not None and other.ndim == value.ndim:
                pairs = enumerate(zip(value.shape, other.shape))
                shape = [-1 if a != b or i == 0 else a for i, (a, b) in pairs]
            specs.append(TensorSpec(key, _datatype(key, value), tuple(shape)))
        self.processor.signature = Signature(self.inputs, specs)
        self.outputs = specs

    def _forward(self, inputs: Mapping[str, np.ndarray]) -> Any:
        device, float_dtype = placement(self.module)
        with no_grad():
            arguments = self.processor.preprocess(inputs)
            result = self.module(*(to_tensor(a, device, float_dtype) for a in arguments))
        if isinstance(result, dict):
            return {k: v for k, v in result.items() if v is not None}
        if isinstance(result, (list, tuple)):
            return tuple(r for r in result if r is not None)
        return result


class CodeProcessor(Processor):
    """Inputs positionally; a tensor, tuple (``None`` left out) or dict result to named outputs."""

    def results(self, result: Any) -> dict[str, np.ndarray]:
        """The forward's result (tensors) as host arrays keyed by discovered output name."""
        if isinstance(result, dict):
            return {str(k): to_host(v) for k, v in result.items()}
        if isinstance(result, tuple):
            return {f"output__{i}": to_host(r) for i, r in enumerate(result)}
        return {"output": to_host(result)}

    def postprocess(self, results: Any) -> dict[str, np.ndarray]:
        if isinstance(results, dict):
            got = {str(k): v for k, v in results.items() if v is not None}
            wanted = [spec.name for spec in self.signature.outputs]
            missing = [name for name in wanted if name not in got]
            if missing:
                raise InputError(
                    f"the model returned the keys {sorted(got)}, without the declared output(s) {missing}"
                )
            return got
        kept = [r for r in results if r is not None] if isinstance(results, (list, tuple)) else [results]
        if len(kept) != len(self.signature.outputs):
            raise InputError(
                f"the model returned {len(kept)} tensor(s), but model.json declares "
                f"{len(self.signature.outputs)} output(s)"
            )
        return {spec.name: value for spec, value in zip(self.signature.outputs, kept)}

    def example_inputs(self, batch_size: int = 1, variable: int = 1) -> dict[str, np.ndarray]:
        """Zeros shaped from the inputs: the batch dimension ``batch_size``, other ``-1`` as ``variable``."""
        return {
            spec.name: np.zeros(
                (batch_size, *(variable if d < 0 else d for d in spec.shape[1:])), DATATYPES[spec.datatype]
            )
            for spec in self.signature.inputs
        }


def _input_specs(entries: Sequence[Mapping[str, Any]], module: Module) -> list[TensorSpec]:
    if not entries:
        raise ArchitectureError("'inputs' must list forward's tensor arguments, e.g. "
                                '[{"name": "image", "datatype": "FP32", "shape": [-1, 3, 32, 32]}]')
    names = _forward_parameters(module)
    specs = []
    for i, entry in enumerate(entries):
        default = names[i] if i < len(names) else None
        spec = _tensor_spec(entry, f"inputs[{i}]", default)
        if spec.datatype == "BYTES":
            raise ArchitectureError(f"inputs[{i}] ({spec.name!r}): forward takes tensors, not BYTES")
        specs.append(spec)
    if len({s.name for s in specs}) != len(specs):
        raise ArchitectureError(f"input names must differ: {[s.name for s in specs]}")
    return specs


def _output_specs(entries: Sequence[Mapping[str, Any]] | None) -> list[TensorSpec]:
    specs = [_tensor_spec(entry, f"outputs[{i}]", None) for i, entry in enumerate(entries or ())]
    if len({s.name for s in specs}) != len(specs):
        raise ArchitectureError(f"output names must differ: {[s.name for s in specs]}")
    return specs


def _tensor_spec(entry: Mapping[str, Any], where: str, default_name: str | None) -> TensorSpec:
    if not isinstance(entry, Mapping):
        raise ArchitectureError(f"{where} must be an object with 'datatype' and 'shape'")
    unknown = sorted(set(entry) - {"name", "datatype", "shape"})
    if unknown:
        raise ArchitectureError(f"{where}: unknown key(s) {unknown}; accepted keys: datatype, name, shape")
    name = entry.get("name", default_name)
    if not isinstance(name, str) or not name:
        raise ArchitectureError(f"{where} needs a 'name': forward has no positional parameter for it")
    datatype, shape = entry.get("datatype"), entry.get("shape")
    if datatype not in DATATYPES:
        raise ArchitectureError(f"{where} ({name!r}): 'datatype' must be one of {', '.join(DATATYPES)}")
    if (not isinstance(shape, (list, tuple)) or not shape
            or not all(isinstance(d, int) and not isinstance(d, bool) and (d > 0 or d == -1) for d in shape)):
        raise ArchitectureError(
            f"{where} ({name!r}): 'shape' must be a list of positive sizes or -1, batch dimension first, "
            "e.g. [-1, 3, 32, 32]"
        )
    return TensorSpec(name, datatype, tuple(shape))


def _forward_parameters(module: Module) -> list[str]:
    try:
        parameters = inspect.signature(module.forward).parameters.values()
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in parameters if p.kind in kinds]


def _datatype(name: str, value: np.ndarray) -> str:
    datatype = _NUMPY_TO_V2.get(np.dtype(value.dtype))
    if datatype is None:
        raise ModelCodeError(f"output {name!r} has dtype {value.dtype}, which no V2 datatype carries")
    return datatype


def describe_error(exc: BaseException, folder: Path) -> str:
    """``model.py:14 in forward: ValueError: ...``: an exception of the folder's code, located."""
    text = str(exc).strip()
    if not isinstance(exc, (AttributeError, ImportError)) or not text.endswith("is not available in mininn"):
        text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    where = code_location(exc, folder)
    return f"{where}: {text}" if where else text


@contextmanager
def located(folder: Path) -> Iterator[None]:
    """Turn any exception of the user's code into :class:`ModelCodeError` with its file and line."""
    try:
        yield
    except ModelCodeError:
        raise
    except Exception as exc:
        if isinstance(exc, ImportError) and not isinstance(exc, ModuleNotFoundError):
            exc = _from_import_error(exc)
        raise ModelCodeError(describe_error(exc, folder)) from exc


def _from_import_error(exc: ImportError) -> BaseException:
    """``from torch.nn import X`` that CPython reports as "cannot import name": keep our wording."""
    match = re.match(r"cannot import name '([^']+)' from '(torch(?:\.[\w.]+)?)'", str(exc))
    if match is None:
        return exc
    renamed = ImportError(f"{match[2]}.{match[1]} is not available in mininn")
    return renamed.with_traceback(exc.__traceback__)
