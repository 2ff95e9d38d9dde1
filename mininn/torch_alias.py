"""Run code written for torch on mininn: ``import torch`` answered by mininn, in that code only.

:func:`load_code` imports a ``.py`` file from a folder as a small package. In that
file, and in the sibling files it imports (``from .layers import Block``,
``from layers import Block`` or ``import layers``), ``import torch``,
``import torch.nn as nn``, ``from torch import nn``, ``import torch.nn.functional
as F`` and ``torch.nn.init`` resolve to mininn's modules (``import torchvision`` to
:mod:`mininn.vision`), so a model file written for torch runs unchanged. Nothing else
sees the alias: ``sys.modules["torch"]`` is never touched, so a real torch imported
elsewhere in the process stays
itself, before and after. Other imports (numpy, math, ...) are ordinary ones.

A name that mininn lacks raises :class:`TorchNameError` (an ``AttributeError``)
or :class:`TorchImportError` (an ``ImportError``) saying so, e.g.
``torch.stft is not available in mininn``; :func:`code_location` finds the
file and line in the loaded code where it was asked for.

Example::

    module = load_code(Path("my-net"), "model.py")
    net = module.Net(num_classes=10)      # a mininn.nn.Module
"""

from __future__ import annotations

import builtins
import importlib
import itertools
import sys
import threading
import traceback
from collections.abc import Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["TorchImportError", "TorchNameError", "code_location", "load_code", "torch_module"]

_ROOT = "mininn_torch_code"  # the synthetic packages live under this name in sys.modules
_ALIASES: dict[str, ModuleType] = {}
_FOLDERS: dict[str, Path] = {}  # package name -> its folder
_COUNTER = itertools.count(1)
_LOCK = threading.Lock()


class TorchNameError(AttributeError):
    """A ``torch.*`` attribute that mininn does not have."""

    def __init__(self, torch_name: str) -> None:
        super().__init__(f"{torch_name} is not available in mininn")
        self.torch_name = torch_name


class TorchImportError(ImportError):
    """An ``import torch.*`` or ``from torch.* import name`` of something mininn does not have."""

    def __init__(self, torch_name: str) -> None:
        super().__init__(f"{torch_name} is not available in mininn", name=torch_name)
        self.torch_name = torch_name


class _TorchAlias(ModuleType):
    """``torch.<path>`` answered by ``mininn.<path>``; missing names raise :class:`TorchNameError`."""

    def __init__(self, torch_name: str, target: ModuleType) -> None:
        super().__init__(torch_name, target.__doc__)
        self.__dict__["_target"] = target

    def __getattr__(self, attr: str) -> Any:
        target = self.__dict__["_target"]
        if attr.startswith("__") and attr.endswith("__"):
            return getattr(target, attr)
        value = getattr(target, attr, _MISSING)
        if value is _MISSING:
            value = _submodule(target, attr)
        if value is _MISSING:
            raise TorchNameError(f"{self.__name__}.{attr}")
        if isinstance(value, ModuleType) and value.__name__.startswith("mininn"):
            return _alias(f"{self.__name__}.{attr}", value)
        return value

    def __setattr__(self, attr: str, value: Any) -> None:
        # ``torch.backends.cudnn.benchmark = True`` sets the flag on mininn's module, as it would on torch's
        if attr.startswith("__") and attr.endswith("__"):
            super().__setattr__(attr, value)
        else:
            setattr(self.__dict__["_target"], attr, value)

    def __dir__(self) -> list[str]:
        return dir(self.__dict__["_target"])

    def __repr__(self) -> str:
        return f"<module {self.__name__!r} (mininn's {self.__dict__['_target'].__name__})>"


_MISSING = object()


def _submodule(target: ModuleType, attr: str) -> Any:
    name = f"{target.__name__}.{attr}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return _MISSING
        raise


def _alias(torch_name: str, target: ModuleType) -> ModuleType:
    with _LOCK:
        alias = _ALIASES.get(torch_name)
        if alias is None:
            alias = _ALIASES[torch_name] = _TorchAlias(torch_name, target)
    return alias


# The packages that loaded code imports by torch's names, and mininn's package answering each.
_ROOTS = {"torch": "mininn", "torchvision": "mininn.vision"}


def torch_module(name: str = "torch") -> ModuleType:
    """The module that ``import <name>`` gives in loaded code (``"torch.nn"`` -> mininn.nn's alias).

    ``name`` starts with ``torch`` or ``torchvision`` (answered by :mod:`mininn.vision`).

    Raises:
        TorchImportError: mininn has no such module.
    """
    root = name.partition(".")[0]
    module: Any = _alias(root, importlib.import_module(_ROOTS[root]))
    for part in name.split(".")[1:]:
        try:
            module = getattr(module, part)
        except TorchNameError as exc:
            raise TorchImportError(exc.torch_name) from None
        if not isinstance(module, ModuleType):
            raise TorchImportError(f"{name} (not a module)")
    return module


def _import_torch(name: str, fromlist: Sequence[str] | None) -> ModuleType:
    module = torch_module(name)
    if not fromlist:
        return torch_module(name.partition(".")[0])
    for attr in fromlist:
        if attr != "*" and not hasattr(module, attr):
            raise TorchImportError(f"{name}.{attr}")
    return module


# -- loading a folder's code --------------------------------------------------------------------------


def load_code(folder: Path, filename: str) -> ModuleType:
    """Import ``folder/filename`` (a ``.py`` file) with ``torch`` answered by mininn.

    Each call imports afresh, as a new package: edited files are read again. A
    file that fails to import leaves nothing behind in ``sys.modules``.

    Args:
        folder: The folder holding the file and its siblings.
        filename: The file's name in the folder, e.g. ``"model.py"``.

    Returns:
        The imported module.

    Raises:
        FileNotFoundError: no such file.
        Exception: whatever the code raises while it is imported (:func:`code_location`
            finds where).
    """
    folder = Path(folder).resolve()
    path = folder / filename
    if path.suffix != ".py" or path.parent != folder or not path.is_file():
        raise FileNotFoundError(f"no Python file {filename!r} in {folder}")
    _install_finder()
    package = f"{_ROOT}.p{next(_COUNTER)}"
    with _LOCK:
        _FOLDERS[package] = folder
    try:
        importlib.import_module(package)
        return importlib.import_module(f"{package}.{path.stem}")
    except BaseException:
        forget(package)
        raise


def forget(package: str) -> None:
    """Drop a loaded package and its modules from ``sys.modules`` (a loaded module keeps working)."""
    with _LOCK:
        _FOLDERS.pop(package, None)
    # list() copies the keys in one step: another thread may be importing meanwhile.
    for name in [n for n in list(sys.modules) if n == package or n.startswith(package + ".")]:
        sys.modules.pop(name, None)


def code_location(exc: BaseException, folder: Path) -> str | None:
    """``"model.py:14 in __init__"`` for the last traceback frame of ``exc`` in code under ``folder``.

    For a ``SyntaxError`` in such code, its file and line. None when no frame is in ``folder``.
    """
    folder = Path(folder).resolve()
    if isinstance(exc, SyntaxError) and exc.filename and _inside(exc.filename, folder):
        return f"{Path(exc.filename).resolve().relative_to(folder)}:{exc.lineno}"
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if _inside(frame.filename, folder):
            found = frame
    if found is None:
        return None
    where = f"{Path(found.filename).resolve().relative_to(folder)}:{found.lineno}"
    return where if found.name == "<module>" else f"{where} in {found.name}"


def _inside(filename: str, folder: Path) -> bool:
    try:
        Path(filename).resolve().relative_to(folder)
    except ValueError:
        return False
    return True


class _CodeFinder(MetaPathFinder):
    """Finds the synthetic packages and the files inside their folders."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if fullname == _ROOT:
            return ModuleSpec(fullname, _CodeLoader(None, None), is_package=True)
        if not fullname.startswith(_ROOT + "."):
            return None
        parts = fullname.split(".")
        package = ".".join(parts[:2])
        folder = _FOLDERS.get(package)
        if folder is None:
            return None
        if len(parts) == 2:
            init = folder / "__init__.py"
            return _spec(fullname, package, init if init.is_file() else None, folder)
        base = folder.joinpath(*parts[2:-1])
        as_file, as_dir = base / f"{parts[-1]}.py", base / parts[-1]
        if as_file.is_file():
            return _spec(fullname, package, as_file, None)
        if (as_dir / "__init__.py").is_file():
            return _spec(fullname, package, as_dir / "__init__.py", as_dir)
        return None


def _spec(fullname: str, package: str, file: Path | None, directory: Path | None) -> ModuleSpec:
    spec = ModuleSpec(fullname, _CodeLoader(file, package), origin=str(file) if file else None,
                      is_package=directory is not None)
    if directory is not None:
        spec.submodule_search_locations = []  # only _CodeFinder finds what is inside
    spec.has_location = file is not None
    return spec


class _CodeLoader(Loader):
    def __init__(self, file: Path | None, package: str | None) -> None:
        self.file, self.package = file, package

    def create_module(self, spec: ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        if self.package is not None:
            module.__dict__["__builtins__"] = _builtins_for(self.package)
        if self.file is None:
            return
        module.__file__ = str(self.file)
        code = compile(self.file.read_bytes(), str(self.file), "exec", dont_inherit=True)
        exec(code, module.__dict__)  # noqa: S102 - the operator's model code, by design


def _builtins_for(package: str) -> dict[str, Any]:
    """Builtins whose ``__import__`` answers ``torch`` with mininn and finds the folder's siblings."""
    folder = _FOLDERS[package]
    real_import = builtins.__import__

    def import_(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
                ) -> Any:
        if level == 0:
            head = name.partition(".")[0]
            if head in _ROOTS:
                return _import_torch(name, fromlist)
            if head == "einops":  # einops' functions on mininn tensors; einops.layers.torch is mininn's
                return importlib.import_module("mininn.einops_code").import_for_loaded_code(name, fromlist)
            if (folder / f"{head}.py").is_file() or (folder / head / "__init__.py").is_file():
                module = real_import(f"{package}.{name}", globals, locals, fromlist, 0)
                return module if fromlist else sys.modules[f"{package}.{head}"]
        return real_import(name, globals, locals, fromlist, level)

    namespace = dict(builtins.__dict__)
    namespace["__import__"] = import_
    return namespace


_finder = _CodeFinder()


def _install_finder() -> None:
    with _LOCK:
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)
