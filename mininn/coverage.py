"""``python -m mininn.coverage``: which of torch's public names mininn has, which it lacks, and why.

The reference lists (``torch.nn.modules.__all__``, the public functions of
``torch.nn.functional``, ``torch.nn.utils.__all__`` and the public callables of
``torch``) are stored as
data in ``mininn/_torch_names.py`` (mininn never imports torch). A name
mininn lacks is either *excluded*, with the reason it is out of scope, or
*missing* (not done yet). The ``torch.nn`` namespaces list their exclusions
name by name and are expected to have nothing missing; the ``torch`` top level
is classified by rules, and what no rule covers is reported as missing.

``docs/torch-coverage.md`` is this module's output::

    python -m mininn.coverage > docs/torch-coverage.md
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import mininn
import mininn.nn
import mininn.nn.functional
import mininn.nn.utils
from mininn import _torch_names

__all__ = ["NAMESPACES", "Namespace", "Row", "main", "missing", "report", "rows"]

_TORCH_FUNCTION = "the __torch_function__ override protocol; mininn has no tensor-subclass dispatch"
_DISTRIBUTED = "distributed training (synchronises across processes); mininn runs in one process"

NN_MODULE_EXCLUSIONS: dict[str, str] = {
    "Container": "deprecated: its constructor warns that nn.Module now does all it did; use Module, "
                 "Sequential or ModuleDict",
    "SyncBatchNorm": _DISTRIBUTED,
}

NN_FUNCTIONAL_EXCLUSIONS: dict[str, str] = {
    "assert_int_or_pair": "torch's internal argument check, not a tensor function",
    "boolean_dispatch": "TorchScript helper that picks one of two functions by a flag",
    "grouped_mm": "CUDA-only bf16 grouped GEMM kernel for mixture-of-experts (SM >= 80)",
    "handle_torch_function": _TORCH_FUNCTION,
    "has_torch_function": _TORCH_FUNCTION,
    "has_torch_function_unary": _TORCH_FUNCTION,
    "has_torch_function_variadic": _TORCH_FUNCTION,
    "scaled_grouped_mm": "low-precision (FP8/MX) scaled grouped GEMM for GPUs; mininn has no FP8 dtypes",
    "scaled_mm": "low-precision (FP8/MX) scaled GEMM for GPUs; mininn has no FP8 dtypes",
}

NN_UTILS_EXCLUSIONS: dict[str, str] = {
    "convert_conv2d_weight_memory_format": "memory formats (channels_last) are a cuDNN layout optimisation; "
                                           "mininn tensors have one layout",
    "convert_conv3d_weight_memory_format": "memory formats (channels_last) are a cuDNN layout optimisation; "
                                           "mininn tensors have one layout",
}

# The namespaces around the layers (issue 30): what model files import beside torch.nn.
_DATAPIPES = "DataPipes (torchdata's graph API, deprecated in torch); model files use Dataset/DataLoader"
UTILS_DATA_EXCLUSIONS: dict[str, str] = {
    "DFIterDataPipe": _DATAPIPES,
    "DataChunk": _DATAPIPES,
    "IterDataPipe": _DATAPIPES,
    "MapDataPipe": _DATAPIPES,
    "argument_validation": _DATAPIPES,
    "functional_datapipe": _DATAPIPES,
    "guaranteed_datapipes_determinism": _DATAPIPES,
    "non_deterministic": _DATAPIPES,
    "runtime_validation": _DATAPIPES,
    "runtime_validation_disabled": _DATAPIPES,
}
_COMPILED = "compiled TorchScript objects; jit.script/trace return the eager code itself, so none exist"
_ARCHIVES = "TorchScript and flatbuffer archives; save a state dict and serve it with model.py instead"
JIT_EXCLUSIONS: dict[str, str] = {
    "CompilationUnit": _COMPILED,
    "ONNXTracedModule": _COMPILED,
    "RecursiveScriptClass": _COMPILED,
    "RecursiveScriptModule": _COMPILED,
    "ScriptFunction": _COMPILED,
    "TopLevelTracedModule": _COMPILED,
    "TracedModule": _COMPILED,
    "export_opnames": "lists a scripted module's operators for mobile builds; nothing is scripted",
    "jit_module_from_flatbuffer": _ARCHIVES,
    "save_jit_module_to_flatbuffer": _ARCHIVES,
    "last_executed_optimized_graph": "TorchScript's executor graph; mininn has no graphs to show",
    "run_frozen_optimizations": "graph passes on a frozen ScriptModule; nothing is compiled",
    "set_module": "TorchScript's internal helper that renames a class's module",
    "strict_fusion": "asserts fusion inside scripted code; nothing is compiled or fused",
}
HUB_EXCLUSIONS: dict[str, str] = {}
_SEMI_STRUCTURED = "2:4 semi-structured sparsity for CUDA's sparse kernels; mininn's sparse tensors are COO"
SPARSE_EXCLUSIONS: dict[str, str] = {
    "check_sparse_tensor_invariants": "mininn always checks COO indices against the size it builds with",
    "solve": "sparse linear solvers; call .to_dense() and use mininn.linalg.solve",
    "SparseSemiStructuredTensor": _SEMI_STRUCTURED,
    "SparseSemiStructuredTensorCUTLASS": _SEMI_STRUCTURED,
    "SparseSemiStructuredTensorCUSPARSELT": _SEMI_STRUCTURED,
    "to_sparse_semi_structured": _SEMI_STRUCTURED,
    "as_sparse_gradcheck": "a gradcheck wrapper for sparse inputs; compare .to_dense() results instead",
}
DISTRIBUTIONS_EXCLUSIONS: dict[str, str] = {}
EINOPS_EXCLUSIONS: dict[str, str] = {}
TORCHVISION_MODELS_EXCLUSIONS: dict[str, str] = {}
TORCHVISION_OPS_EXCLUSIONS: dict[str, str] = {}
TORCHVISION_TRANSFORMS_EXCLUSIONS: dict[str, str] = {}

_JIT_NAMES = (
    "AliasDb Argument ArgumentSpec Block BufferDict CallStack Capsule Code CompilationUnit "
    "CompleteArgumentSpec ConcreteModuleType ConcreteModuleTypeBuilder DeepCopyMemoTable ErrorReport "
    "ExecutionPlan FileCheck FunctionSchema Future Gradient Graph GraphExecutorState IODescriptor "
    "InferredType JITException LockingLogger ModuleDict NoopLogger Node OperatorInfo ParameterDict "
    "StaticModule TracingState Use Value fork import_ir_module import_ir_module_from_buffer "
    "merge_type_from_type_comment parse_ir parse_schema parse_type_comment unify_type_list wait"
).split()

# (pattern, reason), first match wins; a name no rule covers is reported as missing.
TORCH_RULES: tuple[tuple[str, str], ...] = (
    (r"^(Script|LiteScript)|Type$|^(" + "|".join(_JIT_NAMES) + ")$",
     "TorchScript/JIT internals (torch._C bindings); mininn runs eager Python only"),
    (r"Storage$|^(is_storage|from_file|"
     r"DeserializationStorageContext|SerializationStorageContext|PyTorchFileReader|PyTorchFileWriter)$",
     "storage objects; a mininn tensor is an array with a dtype, "
     "checkpoints go through mininn.save/load"),
    (r"^(Sym|sym_)|^(compile|cond|vmap|Tag|DispatchKey|DispatchKeySet|ExcludeDispatchKeyGuard|"
     r"DisableTorchFunction|DisableTorchFunctionSubclass|BenchmarkConfig|BenchmarkExecutionStats|"
     r"ThroughputBenchmark)$",
     "compiler, dispatcher, symbolic-shape and function-transform machinery; mininn has none of them"),
    (r"quantiz|^q_|qscheme|^int_repr$|dequantize|choose_qparams|fake_quant|^fbgemm_",
     "quantized tensors and int8 kernels; mininn has no quantized dtypes"),
    (r"sparse|^(ccol|col|crow|row)_indices_copy$|^(indices|values)_copy$|^(dsmm|hsmm|hspmm|saddmm|smm|"
     r"spmm|sspaddmm)$",
     "sparse layouts other than COO and their kernels; mininn.sparse has COO tensors (sparse_coo_tensor, "
     "spmm, sparse.mm/sum/softmax): call .to_dense() for the rest"),
    (r"^(cudnn|miopen|mkldnn)_|^is_vulkan_available$",
     "vendor-library kernels (cuDNN, MIOpen, oneDNN, Vulkan); mininn's ops run on NumPy or CuPy"),
    (r"autocast|^GradScaler$",
     "automatic mixed precision; cast modules explicitly with .half() or .to(dtype)"),
    (r"^(Stream|Event|get_device_module|AcceleratorError|OutOfMemoryError|FatalError|get_num_threads|"
     r"set_num_threads|get_num_interop_threads|set_num_interop_threads|init_num_threads|"
     r"set_flush_denormal|thread_safe_generator)$",
     "accelerator streams, errors and thread pools; NumPy manages its own threads"),
    (r"^(is_distributed|batch_norm_(backward_elemt|backward_reduce|elemt|gather_stats|"
     r"gather_stats_with_counts|stats|update_stats))$",
     _DISTRIBUTED),
    (r"^(is_conj|resolve_conj|conj_physical_|view_as_complex_copy|view_as_real_copy|resolve_neg|is_neg)$",
     "lazy conjugate/negative views of complex tensors; mininn's complex results are always materialised"),
    (r"_copy$",
     "functionalized copies of view ops, made for compilers; use the view op and .clone()"),
    (r"^(native_\w+|affine_grid_generator|grid_sampler(_2d|_3d)?|constant_pad_nd|convolution|"
     r"embedding_renorm_|feature_dropout_?|norm_except_dim|(rnn_relu|rnn_tanh|gru|lstm)(_cell)?)$",
     "ATen kernels behind torch.nn.functional and the recurrent layers; use the F function or module"),
)


@dataclass(frozen=True)
class Row:
    """One torch name: ``status`` is ``"yes"``, ``"excluded"``, ``"missing"`` or ``"in F"``
    (a top-level name mininn has only in ``mininn.nn.functional``)."""

    name: str
    status: str
    reason: str = ""


@dataclass(frozen=True)
class Namespace:
    """A torch namespace, the mininn object that should hold its names, and its exclusions.

    ``complete`` namespaces list every exclusion by name (and should have nothing missing);
    the others are classified by ``rules`` as well.
    """

    title: str
    torch_names: tuple[str, ...]
    has: Callable[[str], bool]
    exclusions: Mapping[str, str]
    complete: bool = True
    rules: tuple[tuple[str, str], ...] = field(default=())
    functional_counts: bool = False  # a name only in mininn.nn.functional counts ("in F")


def _module_has(module: str) -> Callable[[str], bool]:
    """Whether mininn's ``module`` (imported on first use; absent -> nothing) has a name."""

    def has(name: str) -> bool:
        try:
            found = importlib.import_module(module)
        except ImportError:
            return False
        for part in name.split("."):
            found = getattr(found, part, None)
            if found is None:
                return False
        return True

    return has


def _einops_has(name: str) -> bool:
    """einops' functions work on mininn tensors through mininn.einops' backend; its torch layers
    are mininn.nn.einops_layers' modules."""
    if name.startswith("layers.torch."):
        return _module_has("mininn.nn.einops_layers")(name.rpartition(".")[2])
    try:
        import einops
    except ImportError:
        return False
    return _module_has("mininn.einops")("MininnBackend") and hasattr(einops, name)


NAMESPACES: tuple[Namespace, ...] = (
    Namespace("torch.nn.modules.__all__", _torch_names.NN_MODULES,
              lambda n: hasattr(mininn.nn, n), NN_MODULE_EXCLUSIONS),
    Namespace("torch.nn.functional", _torch_names.NN_FUNCTIONAL,
              lambda n: hasattr(mininn.nn.functional, n), NN_FUNCTIONAL_EXCLUSIONS),
    Namespace("torch.nn.utils", _torch_names.NN_UTILS,
              lambda n: hasattr(mininn.nn.utils, n), NN_UTILS_EXCLUSIONS),
    Namespace("torch", _torch_names.TORCH, lambda n: hasattr(mininn, n), {}, complete=False,
              rules=TORCH_RULES, functional_counts=True),
    Namespace("torch.utils.data", _torch_names.UTILS_DATA, _module_has("mininn.utils.data"),
              UTILS_DATA_EXCLUSIONS, complete=False),
    Namespace("torch.jit", _torch_names.JIT, _module_has("mininn.jit"), JIT_EXCLUSIONS, complete=False),
    Namespace("torch.hub", _torch_names.HUB, _module_has("mininn.hub"), HUB_EXCLUSIONS, complete=False),
    Namespace("torch.sparse", _torch_names.SPARSE, _module_has("mininn.sparse"), SPARSE_EXCLUSIONS,
              complete=False),
    Namespace("torch.distributions", _torch_names.DISTRIBUTIONS, _module_has("mininn.distributions"),
              DISTRIBUTIONS_EXCLUSIONS, complete=False),
    Namespace("einops (on mininn tensors)", _torch_names.EINOPS, _einops_has,
              EINOPS_EXCLUSIONS, complete=False),
    Namespace("torchvision.models", _torch_names.TORCHVISION_MODELS, _module_has("mininn.vision.models"),
              TORCHVISION_MODELS_EXCLUSIONS, complete=False),
    Namespace("torchvision.ops", _torch_names.TORCHVISION_OPS, _module_has("mininn.vision.ops"),
              TORCHVISION_OPS_EXCLUSIONS, complete=False),
    Namespace("torchvision.transforms", _torch_names.TORCHVISION_TRANSFORMS,
              _module_has("mininn.vision.transforms"), TORCHVISION_TRANSFORMS_EXCLUSIONS, complete=False),
)


def _row(ns: Namespace, name: str) -> Row:
    if ns.has(name):
        return Row(name, "yes")
    if name in ns.exclusions:
        return Row(name, "excluded", ns.exclusions[name])
    for pattern, reason in ns.rules:
        if re.search(pattern, name):
            return Row(name, "excluded", reason)
    if ns.functional_counts and hasattr(mininn.nn.functional, name):
        return Row(name, "in F", f"available as mininn.nn.functional.{name}")
    return Row(name, "missing")


def rows(ns: Namespace) -> list[Row]:
    """Every torch name of ``ns`` with what mininn has of it."""
    return [_row(ns, name) for name in ns.torch_names]


def missing(ns: Namespace) -> list[str]:
    """The names of ``ns`` that mininn lacks without an exclusion."""
    return [r.name for r in rows(ns) if r.status == "missing"]


def _counts(ns: Namespace) -> dict[str, int]:
    counts = {"yes": 0, "in F": 0, "excluded": 0, "missing": 0}
    for r in rows(ns):
        counts[r.status] += 1
    return counts


def _summary() -> list[str]:
    lines = ["| namespace | torch names | in mininn | excluded | missing |", "|---|---:|---:|---:|---:|"]
    for ns in NAMESPACES:
        c = _counts(ns)
        have = f"{c['yes']}" + (f" (+{c['in F']} in F)" if c["in F"] else "")
        lines.append(f"| `{ns.title}` | {len(ns.torch_names)} | {have} | {c['excluded']} | {c['missing']} |")
    return lines


def _name_table(ns: Namespace) -> list[str]:
    lines = ["| name | mininn | why not |", "|---|---|---|"]
    for r in rows(ns):
        mark = {"yes": "yes", "excluded": "no (excluded)", "missing": "**missing**"}[r.status]
        lines.append(f"| `{r.name}` | {mark} | {r.reason} |")
    return lines


def _grouped(ns: Namespace) -> list[str]:
    groups: dict[str, list[str]] = {}
    for r in rows(ns):
        if r.status != "yes":
            groups.setdefault(f"{r.status}: {r.reason}" if r.status == "excluded" else r.status, []).append(
                r.name)
    have = [r.name for r in rows(ns) if r.status == "yes"]
    lines = [f"**In mininn ({len(have)}):** " + ", ".join(f"`{n}`" for n in have), ""]
    lines += ["| status | names |", "|---|---|"]
    for key in sorted(groups, key=lambda k: (k.startswith("excluded"), k)):
        names = groups[key]
        if key == "in F":
            key = "only in mininn.nn.functional"
        lines.append(f"| {key} ({len(names)}) | " + ", ".join(f"`{n}`" for n in names) + " |")
    return lines


def report() -> str:
    """The Markdown coverage report (what ``docs/torch-coverage.md`` holds)."""
    lines = [
        f"# mininn's coverage of torch {_torch_names.TORCH_VERSION}",
        "",
        "Generated by `python -m mininn.coverage > docs/torch-coverage.md`; "
        "`tests/mininn/test_coverage.py` fails when it is stale.",
        "A name is *excluded* when it is out of scope for mininn (the reason is given), "
        "*missing* when it is not done yet.",
        "",
        *_summary(),
    ]
    for ns in NAMESPACES:
        lines += ["", f"## `{ns.title}`", ""]
        lines += _name_table(ns) if ns.complete else _grouped(ns)
    return "\n".join(lines) + "\n"


def main() -> None:
    sys.stdout.write(report())


if __name__ == "__main__":
    main()
