"""The README's examples run as written against the server its first command starts.

The server is started as the README's first command starts it: with the
environment variables that command sets (``MININN_API_KEY=secret``), in a clean
temporary working folder whose ``./model_repository`` it seeds. Only the port
differs (tests run in parallel): the blocks' ``localhost:8000`` is rewritten to
it, and their gRPC ``localhost:8001`` to a free gRPC port. Then every block
under ``<!-- readme-test: bash -->`` runs in that folder with ``bash`` (``set
-euo pipefail``; ``curl`` fails on an HTTP error status) and every block under
``<!-- readme-test: python -->`` is executed there, in README order, so files
a block makes are the ones the next block uses. The configuration table in
``docs/http-api.md`` must list every setting with its default.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from _app_support import REPO_ROOT, free_port, run_server

from app.settings import Settings

README = (REPO_ROOT / "README.md").read_text()
BLOCK = re.compile(r"<!-- readme-test: (?P<kind>\w+) -->\n```\w*\n(?P<code>.*?)```", re.S)
BLOCKS = [(m["kind"], m["code"]) for m in BLOCK.finditer(README)]
CURL_FAILS_ON_HTTP_ERRORS = 'curl() { command curl --fail-with-body "$@"; }\n'


def first_command_environment() -> dict[str, str]:
    """The variables the README's first command sets for ``python -m app``."""
    first = README.split("```bash\n", 1)[1].splitlines()[0]
    serve = first.rsplit("&&", 1)[1].strip()
    *assignments, python, dash_m, module = shlex.split(serve)
    assert (python, dash_m, module) == ("python", "-m", "app"), first
    return dict(a.split("=", 1) for a in assignments)


def test_the_readme_is_short_and_has_examples_of_each_kind() -> None:
    assert len(README.splitlines()) <= 380  # 350 before issue 28 (language models: smollm2, Generate text)
    kinds = [kind for kind, _ in BLOCKS]
    assert kinds.count("bash") >= 4 and kinds.count("python") >= 3
    assert set(kinds) == {"bash", "python"}


@pytest.mark.slow
def test_every_example_runs_against_the_first_commands_server(tmp_path: Path, monkeypatch: Any) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    env = first_command_environment()
    assert env == {"MININN_API_KEY": "secret"}
    grpc_port = free_port()  # the README's gRPC example talks to localhost:8001
    with run_server(
        folder / "model_repository",
        tmp_path / "server.log",
        cwd=folder,
        MININN_GRPC_PORT=str(grpc_port),
        **env,
    ) as server:
        server.wait_ready(300)  # smollm2 (when installed) reads its GGUF file for tens of seconds
        monkeypatch.chdir(folder)
        path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        for index, (kind, code) in enumerate(BLOCKS):
            code = code.replace("localhost:8000", server.url).replace("127.0.0.1:8000", server.url)
            code = code.replace("localhost:8001", f"{server.host}:{grpc_port}")
            if kind == "bash":
                script = "set -euo pipefail\n" + CURL_FAILS_ON_HTTP_ERRORS + code
                run = subprocess.run(["bash", "-c", script], cwd=folder, capture_output=True, text=True,
                                     timeout=300, env={**os.environ, "PATH": path})
                assert run.returncode == 0, f"README bash block {index} failed:\n{code}\n{run.stderr}"
                assert run.stdout.strip(), f"README bash block {index} printed nothing"
            else:
                printed = io.StringIO()
                with contextlib.redirect_stdout(printed):
                    exec(compile(code, f"README.md python block {index}", "exec"), {"__name__": "readme"})
                assert printed.getvalue().strip(), f"README python block {index} printed nothing"
        rows = httpx.post(f"{server.base_url}/v2/repository/index").json()
        states = {row["name"]: row["state"] for row in rows}
        assert states["my-mlp"] == states["my-net"] == states["smollm2"] == "READY"
    repository = folder / "model_repository"
    assert (repository / "my-mlp" / "1").is_dir() and not (repository / "my-mlp" / "2").exists()
    with np.load(folder / "my-mlp-v1.npz") as downloaded:
        assert sorted(downloaded.files) == ["0.bias", "0.weight", "3.bias", "3.weight"]
    assert sorted(p.name for p in (repository / "my-net").iterdir()) == ["1", "model.json", "net.py"]


def test_the_configuration_table_lists_every_setting_with_its_default() -> None:
    section = (REPO_ROOT / "docs" / "http-api.md").read_text().split("## Configuration", 1)[1]
    rows = dict(re.findall(r"^\| `(MININN_\w+)` \| (.*?) \|", section, re.M))
    fields = Settings.model_fields
    assert sorted(rows) == sorted(f"MININN_{name.upper()}" for name in fields)
    for name, field in fields.items():
        assert rows[f"MININN_{name.upper()}"] == _readme_default(
            name, field.get_default(call_default_factory=True)
        )


def test_the_docs_link_to_files_that_exist() -> None:
    for page in [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


def _readme_default(name: str, default: Any) -> str:
    if name == "inference_threads":
        return "`min(4, CPUs)`"
    if default is None:
        return "unset"
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    if isinstance(default, float) and default.is_integer():
        return f"`{int(default)}`"
    return f"`{default}`"
