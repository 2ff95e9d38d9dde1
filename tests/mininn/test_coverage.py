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
    """The reference lists, read from the installed torch."""
    import torch
    import torch.nn.functional as F

    def is_function(obj: object) -> bool:
        return isinstance(obj, (types.FunctionType, types.BuiltinFunctionType))

    return {
        "NN_MODULES": tuple(sorted(set(torch.nn.modules.__all__))),
        "NN_FUNCTIONAL": tuple(sorted(n for n in dir(F)
                                      if not n.startswith("_") and is_function(getattr(F, n)))),
        "NN_UTILS": tuple(sorted(set(torch.nn.utils.__all__))),
        "TORCH": tuple(sorted({n for n in torch.__all__ if not n.startswith("_")
                               and callable(getattr(torch, n, None))})),
        "SPARSE": tuple(sorted(set(torch.sparse.__all__))),
    }


def render_names_module() -> str:
    import torch

    version = torch.__version__.split("+")[0]
    parts = [
        f'"""Public names of torch {version}: the reference of ``mininn.coverage``.\n\n'
        "Facts, not code: generated from the installed torch by\n"
        f"``{REGENERATE_NAMES}``; do not edit by hand.\n"
        '"""\n\n'
        f'TORCH_VERSION = "{version}"\n'
    ]
    comments = {
        "NN_MODULES": "torch.nn.modules.__all__",
        "NN_FUNCTIONAL": "public functions of torch.nn.functional",
        "NN_UTILS": "torch.nn.utils.__all__",
        "TORCH": "public callables of torch.__all__",
        "SPARSE": "torch.sparse.__all__",
    }
    for key, names in torch_name_lists().items():
        body = textwrap.fill(" ".join(f'"{n}",' for n in names), width=100,
                             initial_indent="    ", subsequent_indent="    ", break_on_hyphens=False)
        parts.append(f"\n# {comments[key]}\n{key}: tuple[str, ...] = (\n{body}\n)\n")
    return "".join(parts)


def test_stored_torch_name_lists_are_the_installed_torchs():
    pytest.importorskip("torch")
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
    NAMES_FILE.write_text(render_names_module())
    sys.stdout.write(f"wrote {NAMES_FILE.relative_to(ROOT)}\n")
