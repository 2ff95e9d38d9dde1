"""Helpers of the deployment tests: reading the Dockerfile, compose interpolation, the scripts.

Nothing here needs a container runtime; ``_podman`` holds what the container tests need.
"""

from __future__ import annotations

import importlib.util
import json
import re
import socket
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCKER_DIR = REPO_ROOT / "deploy" / "docker"
KUBERNETES_DIR = REPO_ROOT / "deploy" / "kubernetes"
NGINX_TEMPLATE = REPO_ROOT / "deploy" / "nginx" / "default.conf.template"


def settings_variables() -> set[str]:
    """``MININN_<FIELD>`` for every field of the service's settings class."""
    from app.settings import ENV_PREFIX, Settings

    return {f"{ENV_PREFIX}{name.upper()}" for name in Settings.model_fields}


def load_script(name: str) -> ModuleType:
    """Import ``deploy/docker/<name>.py`` (a script, not a package) as a module."""
    path = DOCKER_DIR / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"deploy_docker_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# --- Dockerfile --------------------------------------------------------------------------------


@dataclass
class Stage:
    """One ``FROM`` stage: its base, its name and its instructions in order."""

    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        """The arguments of every ``keyword`` instruction (upper case), in order."""
        return [args for key, args in self.instructions if key == keyword]

    def last(self, keyword: str) -> str:
        """The arguments of the last ``keyword`` instruction (it must exist)."""
        found = self.all(keyword)
        assert found, f"stage {self.name or self.base!r} has no {keyword}"
        return found[-1]

    def env(self) -> dict[str, str]:
        """The ``ENV key=value`` pairs of the stage (later ones win)."""
        values: dict[str, str] = {}
        for args in self.all("ENV"):
            for pair in re.findall(r'(\w+)=("[^"]*"|\S+)', args):
                values[pair[0]] = pair[1].strip('"')
        return values


def dockerfile_stages(path: Path = REPO_ROOT / "Dockerfile") -> tuple[dict[str, str], list[Stage]]:
    """The global ``ARG`` defaults and the stages of a Dockerfile."""
    text = re.sub(
        r"\\\n", " ", "\n".join(line for line in path.read_text().splitlines() if not _comment(line))
    )
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        keyword, _, rest = line.strip().partition(" ")
        keyword, rest = keyword.upper(), " ".join(rest.split())
        if keyword == "FROM":
            base, _, name = rest.partition(" AS ")
            base = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), base)
            stages.append(Stage(base=base, name=name or None))
        elif not stages:
            if keyword == "ARG":
                key, _, value = rest.partition("=")
                args[key] = value.strip('"')
        else:
            stages[-1].instructions.append((keyword, rest))
    return args, stages


def _comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def exec_form(args: str) -> list[str]:
    """The JSON array of an exec-form ``CMD``/``HEALTHCHECK CMD`` (raises if shell form)."""
    value = json.loads(args)
    assert isinstance(value, list) and all(isinstance(item, str) for item in value), args
    return value


def dockerignore_excludes(path: str, patterns: list[str]) -> bool:
    """Whether ``path`` (relative, '/'-separated) is left out of the build context.

    The last matching pattern wins; ``!`` re-includes; a pattern that matches a folder
    matches everything in it (Docker's rules, with ``**`` for any number of folders).
    """
    parts = path.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    excluded = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        regex = _glob_regex(pattern.lstrip("!").rstrip("/"))
        if any(regex.fullmatch(candidate) for candidate in candidates):
            excluded = not negate
    return excluded


def _glob_regex(pattern: str) -> re.Pattern[str]:
    out = ""
    for token in re.split(r"(\*\*/|\*\*|\*|\?)", pattern):
        out += {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}.get(token, re.escape(token))
    return re.compile(out)


def read_dockerignore(path: Path = REPO_ROOT / ".dockerignore") -> list[str]:
    """The patterns of a ``.dockerignore`` (comments and blank lines dropped)."""
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not _comment(line)]


# --- compose -----------------------------------------------------------------------------------

_VARIABLE = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}")


def compose_file() -> dict[str, Any]:
    """``docker-compose.yml`` as YAML (anchors merged), not interpolated."""
    return yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())


def compose_variables(text: str) -> set[str]:
    """The names of the ``${VAR}`` / ``${VAR:-default}`` variables in ``text``."""
    return {match.group(1) for match in _VARIABLE.finditer(text)}


def interpolate(value: Any, env: Mapping[str, str] | None = None) -> Any:
    """``value`` with compose's ``${VAR:-default}`` substituted from ``env`` (default: none set)."""
    env = env or {}
    if isinstance(value, str):
        return _VARIABLE.sub(lambda m: env.get(m.group(1)) or (m.group(2) or ""), value)
    if isinstance(value, list):
        return [interpolate(item, env) for item in value]
    if isinstance(value, dict):
        return {key: interpolate(item, env) for key, item in value.items()}
    return value


def env_example() -> dict[str, str]:
    """``NAME -> value`` of every (commented-out or set) assignment in ``.env.example``."""
    assignments = {}
    for line in (REPO_ROOT / ".env.example").read_text().splitlines():
        match = re.fullmatch(r"#?\s*([A-Z][A-Z0-9_]*)=(.*)", line.strip())
        if match:
            assignments[match.group(1)] = match.group(2).strip()
    return assignments


# --- processes ---------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port that was free a moment ago on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(predicate: Callable[[], bool], timeout: float, what: str, interval: float = 0.05) -> float:
    """Poll ``predicate`` (an ``OSError`` counts as not yet) until true; the seconds it took.

    Raises:
        TimeoutError: naming ``what``.
    """
    started = time.monotonic()
    while True:
        try:
            if predicate():
                return time.monotonic() - started
        except OSError:
            pass
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"{what} did not happen within {timeout:.0f} s")
        time.sleep(interval)
