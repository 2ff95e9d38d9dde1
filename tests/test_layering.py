"""The house rules the imports must keep, read from the source with ``ast`` (nothing is imported).

- No import cycles inside ``mininn``, ``models`` or ``app``: module-level and
  function-level imports and ``importlib.import_module("...")`` calls count;
  imports under ``if TYPE_CHECKING:`` do not.
- Layers: ``mininn`` imports neither ``models`` nor ``app``; ``models`` does not import ``app``.
- Outside ``mininn`` no code touches a tensor's private ``._data``, and only
  mininn's own tests (``tests/mininn``, which test some kernels and generated
  tables directly) import a private mininn module.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("mininn", "models", "app")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(path: Path) -> Iterator[tuple[str, list[str]]]:
    """(module, names) for every import in ``path`` that runs, relative ones made absolute."""
    here = _module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    pending: list[ast.AST] = [ast.parse(path.read_text(), str(path))]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            yield from ((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            yield module, [alias.name for alias in node.names]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            yield str(node.args[0].value), []
        pending.extend(ast.iter_child_nodes(node))


def _graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (``from p import sub`` names ``p.sub``)."""
    files = {_module_name(p): p for p in _sources(package)}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        edges: set[str] = set()
        for module, names in _imported(path):
            subs = [f"{module}.{n}" for n in names if f"{module}.{n}" in files]
            edges.update(subs)
            if module in files and len(subs) < len(names) or module in files and not names:
                edges.add(module)
        graph[name] = edges - {name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_package_has_no_import_cycle(package):
    assert _cycles(_graph(package)) == []


def test_cycle_finder_finds_a_cycle_through_a_function_level_import(tmp_path, monkeypatch):
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from . import b\n")  # function-level, relative
    (package / "b.py").write_text("from pkg.sub import c\n")
    (package / "sub" / "c.py").write_text("import importlib\nimportlib.import_module('pkg.a')\n")
    (package / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import e\n"
    )
    (package / "e.py").write_text("from .d import x\n")  # d -> e only under TYPE_CHECKING: no cycle
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    assert _cycles(_graph("pkg")) == [["pkg.a", "pkg.b", "pkg.sub.c"]]


@pytest.mark.parametrize(("package", "forbidden"), [("mininn", ("models", "app")), ("models", ("app",))])
def test_lower_layers_do_not_import_higher_ones(package, forbidden):
    offending = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in _sources(package)
        for module, _ in _imported(path)
        if module.split(".")[0] in forbidden
    ]
    assert offending == []


def _sources(folder: str) -> Iterator[Path]:
    """The ``.py`` files under ``folder``, leaving out hidden folders (virtual environments, caches)."""
    for path in (ROOT / folder).rglob("*.py"):
        if not any(part.startswith(".") for part in path.relative_to(ROOT).parts):
            yield path


def _outside_mininn() -> Iterator[Path]:
    for folder in ("app", "models", "benchmarks", "tests"):
        yield from _sources(folder)


def test_no_private_mininn_module_is_imported_outside_mininn():
    offending = []
    for path in _outside_mininn():
        if path.is_relative_to(ROOT / "tests" / "mininn"):
            continue
        for module, names in _imported(path):
            parts = module.split(".")
            private = [p for p in parts if p.startswith("_")]
            if parts[0] != "mininn":
                continue
            if private or (module == "mininn" and any(n.startswith("_") for n in names)):
                offending.append(f"{path.relative_to(ROOT)}: {module} {names}")
    assert offending == []


_PRIVATE_DATA = re.compile(r"\._data\b")


def test_no_code_outside_mininn_touches_a_tensors_private_data():
    offending = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _outside_mininn()
        if path.name != Path(__file__).name
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if _PRIVATE_DATA.search(line)
    ]
    assert offending == []
