"""Pick, from a ``pip wheel`` folder, the wheels the server needs at run time.

Used by the Dockerfile's builder stage::

    python runtime_wheels.py /wheels/all /wheels/runtime

walks the requirements of ``mininn-serve`` (with the extras they ask for, such as
``uvicorn[standard]``) through the wheels' metadata and copies the closure to the
output folder, leaving out :data:`LEFT_OUT` and whatever only they pull in. The
final image installs that folder with ``--no-deps``, so nothing else can creep in.
Needs the ``packaging`` distribution (the builder's virtual environment has it).
"""

from __future__ import annotations

import shutil
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name, parse_wheel_filename

__all__ = ["LEFT_OUT", "ROOT", "runtime_closure"]

ROOT = "mininn-serve"

#: Requirements the server never exercises, and why; they and their own requirements stay out.
LEFT_OUT: dict[str, str] = {
    "huggingface-hub": "tokenizers' Hub client, only for Tokenizer.from_pretrained; "
    "the service reads tokenizer.json from the model folder",
    "watchfiles": "uvicorn --reload, a development feature",
    "websockets": "uvicorn's WebSocket protocol; the service has no WebSocket routes",
}


def _metadata(wheel: Path) -> list[Requirement]:
    """The ``Requires-Dist`` entries of ``wheel``."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        headers = Parser().parsestr(archive.read(name).decode("utf-8"))
    return [Requirement(line) for line in headers.get_all("Requires-Dist") or []]


def _wanted(requirement: Requirement, extras: frozenset[str]) -> bool:
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({"extra": extra}) for extra in ("", *sorted(extras)))


def runtime_closure(wheels: dict[NormalizedName, Path]) -> dict[NormalizedName, Path]:
    """The wheels that :data:`ROOT` needs, following each requirement's markers and extras.

    Raises:
        SystemExit: a requirement has no wheel in the folder.
    """
    left_out = {canonicalize_name(name) for name in LEFT_OUT}
    pending: list[tuple[NormalizedName, frozenset[str]]] = [(canonicalize_name(ROOT), frozenset())]
    seen: dict[NormalizedName, frozenset[str]] = {}
    while pending:
        name, extras = pending.pop()
        if name in seen and extras <= seen[name]:
            continue
        seen[name] = seen.get(name, frozenset()) | extras
        if name not in wheels:
            raise SystemExit(f"runtime_wheels: no wheel for requirement {name!r} in the folder")
        for requirement in _metadata(wheels[name]):
            child = canonicalize_name(requirement.name)
            if child not in left_out and _wanted(requirement, seen[name]):
                pending.append((child, frozenset(requirement.extras)))
    return {name: wheels[name] for name in sorted(seen)}


def main(argv: list[str]) -> int:
    """Copy the runtime closure from ``argv[0]`` to ``argv[1]``; list it on stdout."""
    source, target = Path(argv[0]), Path(argv[1])
    wheels = {parse_wheel_filename(path.name)[0]: path for path in sorted(source.glob("*.whl"))}
    target.mkdir(parents=True, exist_ok=True)
    for path in runtime_closure(wheels).values():
        shutil.copy2(path, target / path.name)
        sys.stdout.write(f"{path.name}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
