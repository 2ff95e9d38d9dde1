"""The torch coverage table: the stored torch 2.13 name lists are the installed torch's,
docs/torch-coverage.md is up to date, and every torch.nn name mininn lacks has a reason.

Run this file as a script to regenerate the stored name lists::

    python tests/mininn/test_coverage.py
"""

from __future__ import annotations

import sys
import textwrap
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NAMES_FILE = ROOT / "mininn" / "_torch_names.py"
DOC = ROOT / "docs" / "torch-coverage.md"
REGENERATE_NAMES = "python tests/mininn/test_coverage.py"
REGENERATE_DOC = "python -m mininn.coverage > docs/torch-coverage.md"


def torch_name_lists() -> dict[str, tuple[str, ...]]:
    """The reference lists, read from the installed torch, torchvision and einops."""
    import einops
    import torch
    import torch.distributions
    import torch.hub
    import torch.jit
    import torch.nn.functional as F
    import torch.sparse
    import torch.utils.data
    import torchvision  # loads beside CPU torch: tests/conftest.py

    def is_function(obj: object) -> bool:
        return isinstance(obj, (types.FunctionType, types.BuiltinFunctionType))

    def public(names: object) -> tuple[str, ...]:
        return tuple(sorted({n for n in names if not n.startswith("_")}))

    jit_imports = {"torch", "warnings", "contextmanager", "annotations", "Iterator", "frontend", "isinstance"}
    transforms = torchvision.transforms
    return {
        "NN_MODULES": tuple(sorted(set(torch.nn.modules.__all__))),
        "NN_FUNCTIONAL": tuple(sorted(n for n in dir(F)
                                      if not n.startswith("_") and is_function(getattr(F, n)))),
        "NN_UTILS": tuple(sorted(set(torch.nn.utils.__all__))),
        "TORCH": tuple(sorted({n for n in torch.__all__ if not n.startswith("_")
                               and callable(getattr(torch, n, None))})),
        "UTILS_DATA": public(torch.utils.data.__all__),
        "JIT": public(n for n in dir(torch.jit) if n not in jit_imports),
        "HUB": public(torch.hub.__all__),
        "SPARSE": public(torch.sparse.__all__),
        "DISTRIBUTIONS": public(torch.distributions.__all__),
        "TORCHVISION_MODELS": public(torchvision.models.list_models(module=torchvision.models)),
        "TORCHVISION_OPS": public(torchvision.ops.__all__),
        "TORCHVISION_TRANSFORMS": public(n for n in dir(transforms) if n[0].isupper()),
        "EINOPS": public([*einops.__all__, "layers.torch.EinMix", "layers.torch.Rearrange",
                          "layers.torch.Reduce"]),
    }


def render_names_module() -> str:
    import torch
    import torchvision

    version = torch.__version__.split("+")[0]
    parts = [
        f'"""Public names of torch {version}: the reference of ``mininn.coverage``.\n\n'
        "Facts, not code: generated from the installed torch by\n"
        f"``{REGENERATE_NAMES}``; do not edit by hand.\n"
        '"""\n\n'
        f'TORCH_VERSION = "{version}"\n'
        f'TORCHVISION_VERSION = "{torchvision.__version__.split("+")[0]}"\n'
    ]
    comments = {
        "NN_MODULES": "torch.nn.modules.__all__",
        "NN_FUNCTIONAL": "public functions of torch.nn.functional",
        "NN_UTILS": "torch.nn.utils.__all__",
        "TORCH": "public callables of torch.__all__",
        "UTILS_DATA": "torch.utils.data.__all__",
        "JIT": "the public names of torch.jit (its module attributes, less what it imports)",
        "HUB": "torch.hub.__all__",
        "SPARSE": "torch.sparse.__all__",
        "DISTRIBUTIONS": "torch.distributions.__all__",
        "TORCHVISION_MODELS": "torchvision's classification builders (models.list_models(module=models))",
        "TORCHVISION_OPS": "torchvision.ops.__all__",
        "TORCHVISION_TRANSFORMS": "torchvision.transforms' public classes",
        "EINOPS": "einops.__all__ and einops.layers.torch's layers",
    }
    for key, names in torch_name_lists().items():
        body = textwrap.fill(" ".join(f'"{n}",' for n in names), width=100,
                             initial_indent="    ", subsequent_indent="    ", break_on_hyphens=False)
        parts.append(f"\n# {comments[key]}\n{key}: tuple[str, ...] = (\n{body}\n)\n")
    return "".join(parts)


def test_stored_torch_name_lists_are_the_installed_torchs():
    pytest.importorskip("torch")
    pytest.importorskip("einops")
    pytest.importorskip("torchvision")
    from mininn import _torch_names

    expected = torch_name_lists()
    for key, names in expected.items():
        stored = getattr(_torch_names, key)
        assert stored == names, (
            f"{key} is stale: added {sorted(set(names) - set(stored))}, "
            f"removed {sorted(set(stored) - set(names))}; regenerate with `{REGENERATE_NAMES}`"
        )
    assert NAMES_FILE.read_text() == render_names_module(), f"regenerate with `{REGENERATE_NAMES}`"


def test_docs_torch_coverage_md_is_what_mininn_coverage_prints():
    from mininn import coverage

    assert DOC.exists(), f"docs/torch-coverage.md is missing; write it with `{REGENERATE_DOC}`"
    assert DOC.read_text() == coverage.report(), f"docs/torch-coverage.md is stale; run `{REGENERATE_DOC}`"


def test_every_torch_nn_name_mininn_lacks_has_an_exclusion_with_a_reason():
    """torch.nn.modules, torch.nn.functional and torch.nn.utils: nothing missing without a reason."""
    from mininn import coverage

    missing = {ns.title: coverage.missing(ns) for ns in coverage.NAMESPACES if ns.complete}
    lines = [f"  {title} ({len(names)}): {', '.join(names)}" for title, names in missing.items() if names]
    if lines:
        pytest.fail("mininn lacks these names and has no exclusion for them (implement them, or add an "
                    "exclusion with its reason in mininn/coverage.py):\n" + "\n".join(lines), pytrace=False)
    for ns in coverage.NAMESPACES:
        assert all(reason.strip() for reason in ns.exclusions.values())
        assert not set(ns.exclusions) - set(ns.torch_names), "exclusions of names torch does not have"


def test_coverage_module_never_imports_torch():
    import subprocess

    code = "import sys, mininn.coverage; mininn.coverage.report(); assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


if __name__ == "__main__":
    # as tests/conftest.py does: torchvision's C++ meta registrations cannot load beside CPU torch
    meta = "torchvision._meta_registrations"
    sys.modules.setdefault(meta, types.ModuleType(meta))
    NAMES_FILE.write_text(render_names_module())
    sys.stdout.write(f"wrote {NAMES_FILE.relative_to(ROOT)}\n")
